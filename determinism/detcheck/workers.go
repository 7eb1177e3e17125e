package detcheck

import (
	"go/ast"
	"go/token"
	"go/types"
)

// This file recognises the second deterministic use of goroutines: workers
// started in a loop, each writing only its own element of a result slice
// (indexed by the loop variable) and signalling completion through a
// sync.WaitGroup or by sending an empty value on a channel that the
// starting function drains without looking at the values. Whatever the
// scheduling, the results are the same.

// indexedWorkers finds such workers in body; it returns their go
// statements and their completion channels.
func indexedWorkers(info *types.Info, pure *purity, body *ast.BlockStmt) (gos map[*ast.GoStmt]bool, done map[types.Object]bool) {
	gos = make(map[*ast.GoStmt]bool)
	done = make(map[types.Object]bool)
	candidates := make(map[types.Object]bool) // channels sent to by workers
	ast.Inspect(body, func(n ast.Node) bool {
		var loopBody *ast.BlockStmt
		var index types.Object
		switch loop := n.(type) {
		case *ast.RangeStmt:
			loopBody = loop.Body
			if id, ok := loop.Key.(*ast.Ident); ok {
				index = info.ObjectOf(id)
			}
		case *ast.ForStmt:
			loopBody = loop.Body
			if as, ok := loop.Init.(*ast.AssignStmt); ok && len(as.Lhs) == 1 {
				if id, ok := as.Lhs[0].(*ast.Ident); ok {
					index = info.ObjectOf(id)
				}
			}
		default:
			return true
		}
		if index == nil {
			return true
		}
		for _, s := range loopBody.List {
			g, ok := s.(*ast.GoStmt)
			if !ok {
				continue
			}
			lit, ok := g.Call.Fun.(*ast.FuncLit)
			if !ok || len(g.Call.Args) > 0 {
				continue
			}
			if chans, ok := workerBody(info, pure, lit, index); ok {
				gos[g] = true
				for _, ch := range chans {
					candidates[ch] = true
				}
			}
		}
		return true
	})
	for ch := range candidates {
		if drainedBlind(info, body, ch, gos) {
			done[ch] = true
		} else {
			// A channel whose values are read: its workers are not proven.
			for g := range gos {
				if mentions(info, g, ch) {
					delete(gos, g)
				}
			}
		}
	}
	return gos, done
}

// workerBody reports whether a worker writes only results[index] and its
// own locals, calls only pure functions and WaitGroup.Done, and sends only
// empty values; it returns the channels it sends on.
func workerBody(info *types.Info, pure *purity, lit *ast.FuncLit, index types.Object) ([]types.Object, bool) {
	inside := func(obj types.Object) bool { return obj != nil && lit.Pos() <= obj.Pos() && obj.Pos() < lit.End() }
	ownElement := func(e ast.Expr) bool {
		ix, ok := ast.Unparen(e).(*ast.IndexExpr)
		if !ok {
			return false
		}
		id, ok := ast.Unparen(ix.Index).(*ast.Ident)
		return ok && info.ObjectOf(id) == index
	}
	// writable: the worker's own element of a result, or a local of the
	// worker (or a part of one not reached through a pointer, slice or map).
	writable := func(e ast.Expr) bool {
		for {
			if ownElement(e) {
				return true
			}
			switch x := ast.Unparen(e).(type) {
			case *ast.Ident:
				return x.Name == "_" || inside(info.ObjectOf(x))
			case *ast.SelectorExpr:
				if isReference(info.TypeOf(x.X)) {
					return false
				}
				e = x.X
			case *ast.IndexExpr:
				if isReference(info.TypeOf(x.X)) {
					return false
				}
				e = x.X
			default:
				return false
			}
		}
	}
	var chans []types.Object
	ok := true
	ast.Inspect(lit.Body, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.AssignStmt:
			for _, l := range n.Lhs {
				ok = ok && writable(l)
			}
		case *ast.IncDecStmt:
			ok = ok && writable(n.X)
		case *ast.GoStmt, *ast.SelectStmt, *ast.FuncLit:
			ok = false
		case *ast.UnaryExpr:
			ok = ok && n.Op != token.ARROW
		case *ast.SendStmt:
			st, isStruct := info.TypeOf(n.Value).Underlying().(*types.Struct)
			obj := chanObject(info, n.Chan)
			if !isStruct || st.NumFields() != 0 || obj == nil {
				ok = false
			} else {
				chans = append(chans, obj)
			}
		case *ast.CallExpr:
			fn := calleeOf(info, n)
			switch {
			case isMethod(fn, "sync", "WaitGroup", "Done"):
			case fn == nil:
				ok = ok && pure.pureCall(n)
			default:
				ok = ok && pure.pure(fn)
			}
		}
		return ok
	})
	return chans, ok
}

// drainedBlind reports whether ch is made in body and, outside the worker
// go statements, only received from with the value dropped.
func drainedBlind(info *types.Info, body *ast.BlockStmt, ch types.Object, workers map[*ast.GoStmt]bool) bool {
	ok := true
	inspectStack(body, func(n ast.Node, stack []ast.Node) bool {
		if !ok {
			return false
		}
		if g, isGo := n.(*ast.GoStmt); isGo && workers[g] {
			return false
		}
		id, isID := n.(*ast.Ident)
		if !isID || info.ObjectOf(id) != ch {
			return true
		}
		if info.Defs[id] != nil {
			return true // the declaration: ch := make(...)
		}
		switch p := ancestor(stack, 2).(type) {
		case *ast.UnaryExpr:
			_, dropped := ancestor(stack, 3).(*ast.ExprStmt)
			ok = p.Op == token.ARROW && dropped
		case *ast.RangeStmt:
			ok = p.X == n && p.Key == nil && p.Value == nil
		default:
			ok = false
		}
		return true
	})
	return ok
}
