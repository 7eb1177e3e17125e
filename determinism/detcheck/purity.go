package detcheck

import (
	"go/ast"
	"go/token"
	"go/types"

	"golang.org/x/tools/go/analysis"
)

// This file decides which functions of a package are pure: they store
// nothing outside their own locals, start nothing, receive nothing, and
// call only builtins, conversions and other pure functions of the package.
// A map range whose body calls a pure function (total += u.cost()) can then
// be proven order-independent like one that does the arithmetic inline.

// purity knows the pure functions of one package.
type purity struct {
	info  *types.Info
	decls map[*types.Func]*ast.FuncDecl
	memo  map[*types.Func]int8 // 1 pure, 2 not, 3 being decided
}

func newPurity(pass *analysis.Pass) *purity {
	p := &purity{info: pass.TypesInfo, decls: make(map[*types.Func]*ast.FuncDecl), memo: make(map[*types.Func]int8)}
	for _, f := range pass.Files {
		for _, decl := range f.Decls {
			if fd, ok := decl.(*ast.FuncDecl); ok && fd.Body != nil {
				if fn, ok := pass.TypesInfo.Defs[fd.Name].(*types.Func); ok {
					p.decls[fn] = fd
				}
			}
		}
	}
	return p
}

// pure reports whether fn is a pure function of this package.
func (p *purity) pure(fn *types.Func) bool {
	if p == nil || fn == nil {
		return false
	}
	switch p.memo[fn] {
	case 1:
		return true
	case 2, 3: // 3: recursion is not worth proving
		return false
	}
	fd := p.decls[fn]
	if fd == nil {
		return false
	}
	p.memo[fn] = 3
	ok := p.body(fd)
	p.memo[fn] = 2
	if ok {
		p.memo[fn] = 1
	}
	return ok
}

// body checks the body of fd.
func (p *purity) body(fd *ast.FuncDecl) bool {
	local := func(e ast.Expr) bool {
		id, ok := ast.Unparen(e).(*ast.Ident)
		if !ok {
			return false
		}
		if id.Name == "_" {
			return true
		}
		obj := p.info.ObjectOf(id)
		return obj != nil && fd.Pos() <= obj.Pos() && obj.Pos() < fd.End()
	}
	ok := true
	ast.Inspect(fd.Body, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.AssignStmt:
			for _, l := range n.Lhs {
				if !local(l) {
					ok = false
				}
			}
		case *ast.IncDecStmt:
			ok = ok && local(n.X)
		case *ast.GoStmt, *ast.DeferStmt, *ast.SendStmt, *ast.SelectStmt, *ast.FuncLit:
			ok = false
		case *ast.UnaryExpr:
			ok = ok && n.Op != token.ARROW
		case *ast.RangeStmt:
			t := p.info.TypeOf(n.X)
			ok = ok && !allTerms(t, isMap) && !allTerms(t, isChan)
			if _, isSig := t.Underlying().(*types.Signature); isSig {
				ok = false // a range over a function calls it
			}
		case *ast.CallExpr:
			ok = ok && p.pureCall(n)
		}
		return ok
	})
	return ok
}

// pureCall reports whether a call is a conversion, a harmless builtin, or
// a call of a pure function of this package.
func (p *purity) pureCall(call *ast.CallExpr) bool {
	if tv := p.info.Types[call.Fun]; tv.IsType() {
		return true
	}
	if b, ok := p.info.Uses[identOf(call.Fun)].(*types.Builtin); ok {
		switch b.Name() {
		case "len", "cap", "min", "max", "append", "make", "new", "complex", "real", "imag":
			return true
		}
		return false
	}
	return p.pure(calleeOf(p.info, call))
}
