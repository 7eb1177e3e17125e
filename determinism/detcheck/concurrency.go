package detcheck

import (
	"go/ast"
	"go/token"
	"go/types"

	"golang.org/x/tools/go/analysis"
)

// This file reports goroutines, select statements and channels, once per
// channel, except the one pattern whose order is fixed: a channel made in a
// function, filled by the one goroutine that function starts (which touches
// nothing else it shares), and drained in order by the function itself;
// and workers that each write their own element of a result (workers.go).

// checkConcurrency reports the go statements, select statements and
// channel operations of f.
func checkConcurrency(pass *analysis.Pass, rep *reporter, pure *purity, f *ast.File) {
	info := pass.TypesInfo
	exempt := make(map[ast.Node]bool) // go statements and channel objects' uses
	exemptChan := make(map[types.Object]bool)
	for _, decl := range f.Decls {
		if fd, ok := decl.(*ast.FuncDecl); ok && fd.Body != nil {
			for ch, goStmt := range singleProducers(info, fd.Body) {
				exemptChan[ch] = true
				exempt[goStmt] = true
			}
			gos, done := indexedWorkers(info, pure, fd.Body)
			for g := range gos {
				exempt[g] = true
			}
			for ch := range done {
				exemptChan[ch] = true
			}
		}
	}
	reported := make(map[types.Object]bool) // channels already reported
	chanOp := func(pos token.Pos, ch ast.Expr, what string) {
		obj := chanObject(info, ch)
		if obj != nil {
			if exemptChan[obj] || reported[obj] {
				return
			}
			reported[obj] = true
			what += " (" + obj.Name() + "; its other operations are not reported again)"
		}
		rep.add(finding{pos: pos, rule: RuleChan, msg: what + ": delivery order depends on goroutine scheduling"})
	}
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.GoStmt:
			if !exempt[n] {
				rep.add(finding{pos: n.Pos(), rule: RuleGoroutine, msg: "go statement: goroutine scheduling is not deterministic"})
			}
		case *ast.SelectStmt:
			rep.add(finding{pos: n.Pos(), rule: RuleSelect, msg: "select statement: the ready case is chosen at random"})
			return true
		case *ast.SendStmt:
			chanOp(n.Pos(), n.Chan, "channel send")
		case *ast.UnaryExpr:
			if n.Op == token.ARROW {
				chanOp(n.Pos(), n.X, "channel receive")
			}
		case *ast.RangeStmt:
			if allTerms(info.TypeOf(n.X), isChan) {
				chanOp(n.Pos(), n.X, "range over channel")
			}
		case *ast.CallExpr:
			id := identOf(n.Fun)
			b, ok := info.Uses[id].(*types.Builtin)
			if !ok || len(n.Args) == 0 {
				return true
			}
			switch {
			case b.Name() == "close":
				chanOp(n.Pos(), n.Args[0], "close of channel")
			case b.Name() == "make" && allTerms(info.TypeOf(n.Args[0]), isChan):
				if obj := madeInto(info, f, n); obj != nil && exemptChan[obj] {
					return true
				}
				if obj := madeInto(info, f, n); obj != nil {
					if reported[obj] {
						return true
					}
					reported[obj] = true
				}
				rep.add(finding{pos: n.Pos(), rule: RuleChan, msg: "make(chan): channels synchronise goroutines, whose scheduling is not deterministic"})
			}
		}
		return true
	})
}

// chanObject returns the variable or field a channel expression names
// (ch, s.done), or nil for other expressions (ctx.Done()).
func chanObject(info *types.Info, e ast.Expr) types.Object {
	switch x := ast.Unparen(e).(type) {
	case *ast.Ident:
		return info.ObjectOf(x)
	case *ast.SelectorExpr:
		return info.ObjectOf(x.Sel)
	}
	return nil
}

// madeInto returns the variable a make(chan) call is assigned to, or nil.
func madeInto(info *types.Info, f *ast.File, call *ast.CallExpr) types.Object {
	var obj types.Object
	ast.Inspect(f, func(n ast.Node) bool {
		as, ok := n.(*ast.AssignStmt)
		if !ok || obj != nil {
			return obj == nil
		}
		for i, r := range as.Rhs {
			if ast.Unparen(r) == call && i < len(as.Lhs) {
				obj = chanObject(info, as.Lhs[i])
			}
		}
		return true
	})
	return obj
}

// singleProducers finds the channels of body that are made there, sent to
// and closed only by one goroutine started there, and only received from
// outside it; it maps each to its go statement.
func singleProducers(info *types.Info, body *ast.BlockStmt) map[types.Object]*ast.GoStmt {
	made := make(map[types.Object]bool)
	ast.Inspect(body, func(n ast.Node) bool {
		if as, ok := n.(*ast.AssignStmt); ok && as.Tok == token.DEFINE && len(as.Lhs) == len(as.Rhs) {
			for i, r := range as.Rhs {
				call, ok := ast.Unparen(r).(*ast.CallExpr)
				if !ok || !allTerms(info.TypeOf(call), isChan) {
					continue
				}
				if b, ok := info.Uses[identOf(call.Fun)].(*types.Builtin); ok && b.Name() == "make" {
					if id, ok := as.Lhs[i].(*ast.Ident); ok {
						made[info.ObjectOf(id)] = true
					}
				}
			}
		}
		return true
	})
	result := make(map[types.Object]*ast.GoStmt)
	for ch := range made {
		if g := singleProducer(info, body, ch); g != nil {
			result[ch] = g
		}
	}
	return result
}

func singleProducer(info *types.Info, body *ast.BlockStmt, ch types.Object) *ast.GoStmt {
	var producer *ast.GoStmt
	ok := true
	inspectStack(body, func(n ast.Node, stack []ast.Node) bool {
		if !ok {
			return false
		}
		switch n := n.(type) {
		case *ast.SelectStmt:
			if mentions(info, n, ch) {
				ok = false
			}
		case *ast.GoStmt:
			if !mentions(info, n, ch) {
				return true
			}
			lit, isLit := n.Call.Fun.(*ast.FuncLit)
			if producer != nil || !isLit || len(n.Call.Args) > 0 || inLoop(stack) || !producerBody(info, lit, ch) {
				ok = false
				return false
			}
			producer = n
			return false
		case *ast.Ident:
			if info.Uses[n] != ch {
				return true
			}
			// Outside the producer, only receive from ch.
			switch p := ancestor(stack, 2).(type) {
			case *ast.UnaryExpr:
				ok = p.Op == token.ARROW
			case *ast.RangeStmt:
				ok = p.X == n
			default:
				ok = false
			}
		}
		return true
	})
	if !ok {
		return nil
	}
	return producer
}

// inLoop reports whether the innermost node of stack is inside a loop (so a
// go statement there starts many goroutines).
func inLoop(stack []ast.Node) bool {
	for _, n := range stack[:len(stack)-1] {
		switch n.(type) {
		case *ast.ForStmt, *ast.RangeStmt:
			return true
		}
	}
	return false
}

// producerBody reports whether a goroutine's function only sends on ch,
// closes it, and assigns no variable declared outside it.
func producerBody(info *types.Info, lit *ast.FuncLit, ch types.Object) bool {
	ok := true
	inside := func(obj types.Object) bool { return obj != nil && lit.Pos() <= obj.Pos() && obj.Pos() < lit.End() }
	inspectStack(lit.Body, func(n ast.Node, stack []ast.Node) bool {
		if !ok {
			return false
		}
		switch n := n.(type) {
		case *ast.GoStmt, *ast.SelectStmt:
			ok = false
		case *ast.AssignStmt:
			for _, l := range n.Lhs {
				if id := rootIdent(l); id != nil && !isBlank(id) && !inside(info.ObjectOf(id)) {
					ok = false
				}
			}
		case *ast.IncDecStmt:
			if id := rootIdent(n.X); id != nil && !inside(info.ObjectOf(id)) {
				ok = false
			}
		case *ast.Ident:
			if info.Uses[n] != ch {
				return true
			}
			switch p := ancestor(stack, 2).(type) {
			case *ast.SendStmt:
				ok = p.Chan == n
			case *ast.CallExpr:
				b, isBuiltin := info.Uses[identOf(p.Fun)].(*types.Builtin)
				ok = isBuiltin && b.Name() == "close"
			default:
				ok = false
			}
		}
		return true
	})
	return ok
}

// mentions reports whether n uses obj.
func mentions(info *types.Info, n ast.Node, obj types.Object) bool {
	found := false
	ast.Inspect(n, func(m ast.Node) bool {
		if id, ok := m.(*ast.Ident); ok && info.Uses[id] == obj {
			found = true
		}
		return !found
	})
	return found
}
