package detcheck

import (
	"go/ast"
	"go/token"
	"go/types"
)

// This file proves map-range bodies order-independent: every statement is
// commutative accumulation, an integer extremum, a write keyed by the range
// key, a delete, an update of the current element, or an append to a slice
// sorted right after the loop, and nothing reads what an earlier iteration
// wrote.

// mapRangeHarmless reports whether the range over a map rs cannot make
// the program's behaviour depend on the iteration order.
func (o *orderFree) mapRangeHarmless(rs *ast.RangeStmt) bool {
	l := &loopBody{o: o, rs: rs}
	if id, ok := rs.Key.(*ast.Ident); ok {
		l.key = o.info.ObjectOf(id)
	}
	if id, ok := rs.Value.(*ast.Ident); ok {
		l.value = o.info.ObjectOf(id)
	}
	l.sorted = o.sortedSlice(o.next[rs])
	l.written = l.writtenIn(rs.Body)
	return l.block(rs.Body.List)
}

// loopBody checks the statements of one map range.
type loopBody struct {
	o          *orderFree
	rs         *ast.RangeStmt
	key, value types.Object
	sorted     types.Object // the slice sorted after the loop, or nil
	// written holds the containers the body stores into that outlive one
	// iteration ("total", "w.Order", "counts" for counts[k]): reading one
	// of them makes an iteration depend on the ones before it.
	written map[string]bool
}

// writtenIn returns the containers body stores into, other than the
// variables of one iteration and the current element.
func (l *loopBody) writtenIn(body *ast.BlockStmt) map[string]bool {
	written := make(map[string]bool)
	note := func(lhs ast.Expr) {
		root := rootIdent(lhs)
		if root == nil || isBlank(root) || l.iterationLocal(root) {
			return
		}
		written[container(lhs)] = true
	}
	ast.Inspect(body, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.AssignStmt:
			for _, lhs := range n.Lhs {
				note(lhs)
			}
		case *ast.IncDecStmt:
			note(n.X)
		case *ast.CallExpr:
			// delete from another map; deleting the current entry of the
			// ranged map touches nothing a later iteration sees.
			if b, ok := l.o.info.Uses[identOf(n.Fun)].(*types.Builtin); ok && b.Name() == "delete" && len(n.Args) == 2 &&
				!(l.sameExpr(n.Args[0], l.rs.X) && l.isKey(n.Args[1])) {
				note(n.Args[0])
			}
		}
		return true
	})
	return written
}

// container names what an lvalue stores into: the expression without its
// trailing indexes ("counts" for counts[k]).
func container(e ast.Expr) string {
	for {
		ix, ok := ast.Unparen(e).(*ast.IndexExpr)
		if !ok {
			return types.ExprString(ast.Unparen(e))
		}
		e = ix.X
	}
}

// readsWritten reports whether e reads a container the body writes.
func (l *loopBody) readsWritten(e ast.Expr) bool {
	found := false
	ast.Inspect(e, func(n ast.Node) bool {
		switch n.(type) {
		case *ast.Ident, *ast.SelectorExpr, *ast.IndexExpr:
			if l.written[container(n.(ast.Expr))] {
				found = true
			}
		}
		return !found
	})
	return found
}

// lvalueOK reports whether the indexes in an lvalue are pure.
func (l *loopBody) lvalueOK(lhs ast.Expr) bool {
	for {
		switch x := ast.Unparen(lhs).(type) {
		case *ast.IndexExpr:
			if !l.pure(x.Index) {
				return false
			}
			lhs = x.X
		case *ast.SelectorExpr:
			lhs = x.X
		case *ast.StarExpr:
			lhs = x.X
		case *ast.Ident:
			return true
		default:
			return false
		}
	}
}

func (l *loopBody) block(list []ast.Stmt) bool {
	for _, s := range list {
		if !l.stmt(s) {
			return false
		}
	}
	return true
}

func (l *loopBody) stmt(s ast.Stmt) bool {
	info := l.o.info
	switch s := s.(type) {
	case *ast.BlockStmt:
		return l.block(s.List)
	case *ast.BranchStmt:
		return s.Tok == token.CONTINUE && s.Label == nil
	case *ast.EmptyStmt:
		return true
	case *ast.IfStmt:
		if s.Init != nil && !l.stmt(s.Init) {
			return false
		}
		if l.extremum(s) {
			return true
		}
		return l.pure(s.Cond) && l.block(s.Body.List) && (s.Else == nil || l.stmt(s.Else))
	case *ast.IncDecStmt:
		return isInteger(info.TypeOf(s.X)) && l.lvalueOK(s.X) || l.perElement(s.X)
	case *ast.DeclStmt:
		gd, ok := s.Decl.(*ast.GenDecl)
		if !ok || gd.Tok != token.VAR {
			return false
		}
		for _, spec := range gd.Specs {
			for _, v := range spec.(*ast.ValueSpec).Values {
				if !l.pure(v) {
					return false
				}
			}
		}
		return true
	case *ast.ExprStmt:
		call, ok := s.X.(*ast.CallExpr)
		if !ok {
			return false
		}
		if b, ok := info.Uses[identOf(call.Fun)].(*types.Builtin); ok && b.Name() == "delete" {
			if l.sameExpr(call.Args[0], l.rs.X) {
				return l.isKey(call.Args[1]) // another key: it may or may not be visited yet
			}
			return l.lvalueOK(call.Args[0]) && l.pure(call.Args[1])
		}
		return false
	case *ast.AssignStmt:
		return l.assign(s)
	}
	return false
}

// assign accepts the order-independent assignments.
func (l *loopBody) assign(s *ast.AssignStmt) bool {
	info := l.o.info
	if len(s.Lhs) != len(s.Rhs) {
		return false
	}
	for i, lhs := range s.Lhs {
		rhs := s.Rhs[i]
		switch {
		case isBlank(lhs), l.declaredInside(lhs):
			// a local of one iteration
			if !l.pure(rhs) {
				return false
			}
		case l.perElement(lhs) && l.localOnly(rhs):
			// u.X = u.X + u.VX: each element once
		case s.Tok != token.ASSIGN && s.Tok != token.DEFINE:
			// x += e: commutative integer accumulation
			if !isInteger(info.TypeOf(lhs)) || !commutative(s.Tok) || !l.lvalueOK(lhs) || !l.pure(rhs) {
				return false
			}
		case l.appendToSorted(s):
		case l.mapWrite(lhs, rhs):
		case l.minMax(lhs, rhs):
		default:
			return false
		}
	}
	return true
}

func commutative(tok token.Token) bool {
	switch tok {
	case token.ADD_ASSIGN, token.SUB_ASSIGN, token.MUL_ASSIGN, token.OR_ASSIGN, token.AND_ASSIGN, token.XOR_ASSIGN:
		return true
	}
	return false
}

// appendToSorted accepts s = append(s, ...) where s is sorted after the loop.
func (l *loopBody) appendToSorted(s *ast.AssignStmt) bool {
	if l.sorted == nil || len(s.Lhs) != 1 || len(s.Rhs) != 1 {
		return false
	}
	id, ok := s.Lhs[0].(*ast.Ident)
	if !ok || l.o.info.ObjectOf(id) != l.sorted {
		return false
	}
	call, ok := s.Rhs[0].(*ast.CallExpr)
	if !ok || len(call.Args) < 1 {
		return false
	}
	if b, ok := l.o.info.Uses[identOf(call.Fun)].(*types.Builtin); !ok || b.Name() != "append" {
		return false
	}
	first, ok := ast.Unparen(call.Args[0]).(*ast.Ident)
	if !ok || l.o.info.ObjectOf(first) != l.sorted {
		return false
	}
	for _, a := range call.Args[1:] {
		if !l.pure(a) {
			return false
		}
	}
	return true
}

// mapWrite accepts other[k] = e with k the range key (distinct per
// iteration), and other[e] = constant (a set).
func (l *loopBody) mapWrite(lhs, rhs ast.Expr) bool {
	ix, ok := ast.Unparen(lhs).(*ast.IndexExpr)
	if !ok || !isMap(l.o.info.TypeOf(ix.X).Underlying()) || !l.lvalueOK(ix) || !l.pure(rhs) {
		return false
	}
	if l.sameExpr(ix.X, l.rs.X) {
		return l.isKey(ix.Index) // m[k] = e rewrites the current entry
	}
	return l.isKey(ix.Index) || l.o.info.Types[rhs].Value != nil
}

// minMax accepts x = max(x, e) and x = min(x, e) over integers.
func (l *loopBody) minMax(lhs, rhs ast.Expr) bool {
	call, ok := ast.Unparen(rhs).(*ast.CallExpr)
	if !ok || !isInteger(l.o.info.TypeOf(lhs)) {
		return false
	}
	b, ok := l.o.info.Uses[identOf(call.Fun)].(*types.Builtin)
	if !ok || b.Name() != "max" && b.Name() != "min" {
		return false
	}
	self := false
	for _, a := range call.Args {
		switch {
		case l.sameExpr(a, lhs):
			self = true
		case !l.pure(a):
			return false
		}
	}
	return self && l.lvalueOK(lhs)
}

// extremum accepts "if e > x { x = e }" and its kin over integers.
func (l *loopBody) extremum(s *ast.IfStmt) bool {
	be, ok := ast.Unparen(s.Cond).(*ast.BinaryExpr)
	if !ok || s.Else != nil || len(s.Body.List) != 1 {
		return false
	}
	switch be.Op {
	case token.LSS, token.GTR, token.LEQ, token.GEQ:
	default:
		return false
	}
	as, ok := s.Body.List[0].(*ast.AssignStmt)
	if !ok || as.Tok != token.ASSIGN || len(as.Lhs) != 1 || !isInteger(l.o.info.TypeOf(as.Lhs[0])) {
		return false
	}
	x, e := as.Lhs[0], as.Rhs[0]
	shape := l.sameExpr(be.X, x) && l.sameExpr(be.Y, e) || l.sameExpr(be.X, e) && l.sameExpr(be.Y, x)
	return shape && l.pure(e) && l.lvalueOK(x)
}

// perElement reports whether lhs is a part of the current element:
// v.f through a pointer value v, or m[k].
func (l *loopBody) perElement(lhs ast.Expr) bool {
	root := rootIdent(lhs)
	if root == nil {
		return false
	}
	obj := l.o.info.ObjectOf(root)
	if obj == nil {
		return false
	}
	if obj == l.value && obj != nil && ast.Unparen(lhs) != root {
		return isReference(obj.Type())
	}
	if ix, ok := ast.Unparen(lhs).(*ast.IndexExpr); ok {
		return l.sameExpr(ix.X, l.rs.X) && l.isKey(ix.Index)
	}
	return false
}

// localOnly reports whether e reads nothing but constants, the key, the
// value and variables of the current iteration.
func (l *loopBody) localOnly(e ast.Expr) bool {
	if !l.pure(e) {
		return false
	}
	ok := true
	ast.Inspect(e, func(n ast.Node) bool {
		if sel, isSel := n.(*ast.SelectorExpr); isSel {
			ast.Inspect(sel.X, func(m ast.Node) bool {
				if id, isID := m.(*ast.Ident); isID && !l.iterationLocal(id) {
					ok = false
				}
				return ok
			})
			return false
		}
		if id, isID := n.(*ast.Ident); isID && !l.iterationLocal(id) {
			ok = false
		}
		return ok
	})
	return ok
}

func (l *loopBody) iterationLocal(id *ast.Ident) bool {
	switch obj := l.o.info.ObjectOf(id).(type) {
	case *types.Var:
		return obj == l.key || obj == l.value || l.rs.Body.Pos() <= obj.Pos() && obj.Pos() < l.rs.Body.End()
	case nil:
		return true
	default:
		return true // constants, types, functions, packages
	}
}

func (l *loopBody) declaredInside(lhs ast.Expr) bool {
	id, ok := ast.Unparen(lhs).(*ast.Ident)
	if !ok {
		return false
	}
	obj := l.o.info.ObjectOf(id)
	return obj != nil && l.rs.Body.Pos() <= obj.Pos() && obj.Pos() < l.rs.Body.End()
}

func (l *loopBody) isKey(e ast.Expr) bool {
	id, ok := ast.Unparen(e).(*ast.Ident)
	return ok && l.key != nil && l.o.info.ObjectOf(id) == l.key
}

func (l *loopBody) sameExpr(a, b ast.Expr) bool {
	return types.ExprString(ast.Unparen(a)) == types.ExprString(ast.Unparen(b))
}

// pure reports whether evaluating e has no effect and depends on no
// earlier iteration: it calls nothing but conversions, the builtins len,
// cap, min, max and append, and pure functions of the package, and reads
// nothing the body writes.
func (l *loopBody) pure(e ast.Expr) bool {
	if l.readsWritten(e) {
		return false
	}
	info := l.o.info
	ok := true
	ast.Inspect(e, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.CallExpr:
			if tv := info.Types[n.Fun]; tv.IsType() {
				return true
			}
			b, isBuiltin := info.Uses[identOf(n.Fun)].(*types.Builtin)
			if !isBuiltin {
				ok = l.o.pure.pure(calleeOf(info, n))
				return ok
			}
			switch b.Name() {
			case "len", "cap", "min", "max", "append":
			default:
				ok = false
			}
		case *ast.FuncLit:
			ok = false
		case *ast.UnaryExpr:
			if n.Op == token.ARROW {
				ok = false
			}
		}
		return ok
	})
	return ok
}

func identOf(e ast.Expr) *ast.Ident {
	id, _ := ast.Unparen(e).(*ast.Ident)
	return id
}

func isBlank(e ast.Expr) bool {
	id, ok := e.(*ast.Ident)
	return ok && id.Name == "_"
}
