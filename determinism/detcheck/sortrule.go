package detcheck

import (
	"fmt"
	"go/ast"
	"go/token"
	"go/types"
	"strings"

	"golang.org/x/tools/go/analysis"
)

// This file reports unstable sorts whose comparator can tie: equal
// elements then end in an order that is an implementation detail of the
// sort (it changed when Go moved to pattern-defeating quicksort) and that
// follows the input order in ways a stable sort would not promise.

// checkSort reports sort.Slice, sort.Sort and slices.SortFunc calls whose
// comparator can tie.
func checkSort(pass *analysis.Pass, rep *reporter, call *ast.CallExpr) {
	info := pass.TypesInfo
	fn := calleeOf(info, call)
	var cmpFunc *ast.FuncType
	var body *ast.BlockStmt
	var elem func(ast.Expr) bool // reports whether an operand is a whole element
	switch {
	case isPackageFunc(fn, "sort", "Slice") && len(call.Args) == 2,
		isPackageFunc(fn, "slices", "SortFunc") && len(call.Args) == 2:
		if isPackageFunc(calleeValue(info, call.Args[1]), "cmp", "Compare") ||
			isPackageFunc(calleeValue(info, call.Args[1]), "strings", "Compare") ||
			isPackageFunc(calleeValue(info, call.Args[1]), "bytes", "Compare") {
			return // whole values compared: equal ones are indistinguishable
		}
		lit, ok := ast.Unparen(call.Args[1]).(*ast.FuncLit)
		if !ok {
			rep.add(finding{pos: call.Pos(), rule: RuleSort, msg: fmt.Sprintf(
				"%s is not stable and its comparator cannot be checked for ties; use a stable sort or a comparator literal that ends on a unique key", funcName(fn))})
			return
		}
		cmpFunc, body = lit.Type, lit.Body
		params := paramObjects(info, cmpFunc)
		if fn.Name() == "Slice" {
			slice := types.ExprString(ast.Unparen(call.Args[0]))
			elem = func(e ast.Expr) bool {
				ix, ok := ast.Unparen(e).(*ast.IndexExpr)
				if !ok || types.ExprString(ix.X) != slice {
					return false
				}
				id, ok := ast.Unparen(ix.Index).(*ast.Ident)
				return ok && params[info.ObjectOf(id)]
			}
		} else {
			elem = func(e ast.Expr) bool {
				id, ok := ast.Unparen(e).(*ast.Ident)
				return ok && params[info.ObjectOf(id)]
			}
		}
	case isPackageFunc(fn, "sort", "Sort") && len(call.Args) == 1:
		less := lessMethod(pass, info.TypeOf(call.Args[0]))
		if less == nil {
			rep.add(finding{pos: call.Pos(), rule: RuleSort, msg: "sort.Sort is not stable and the Less method cannot be checked for ties; use sort.Stable"})
			return
		}
		cmpFunc, body = less.Type, less.Body
		params := paramObjects(info, cmpFunc)
		elem = func(e ast.Expr) bool {
			ix, ok := ast.Unparen(e).(*ast.IndexExpr)
			if !ok {
				return false
			}
			id, ok := ast.Unparen(ix.Index).(*ast.Ident)
			return ok && params[info.ObjectOf(id)]
		}
	default:
		return
	}
	if body == nil {
		return
	}
	x, y, ok := lastComparison(info, body)
	if !ok {
		rep.add(finding{pos: call.Pos(), rule: RuleSort, msg: fmt.Sprintf(
			"%s is not stable and its comparator cannot be checked for ties; use a stable sort", funcName(fn))})
		return
	}
	if elem(x) && elem(y) && isOrderedBasic(info.TypeOf(x)) || uniqueKey(x) && uniqueKey(y) {
		return
	}
	rep.add(finding{pos: call.Pos(), rule: RuleSort, msg: fmt.Sprintf(
		"%s is not stable and its comparator can tie (it ends comparing %s): equal elements end in an unspecified order; use slices.SortStableFunc or break ties on a unique key",
		funcName(fn), types.ExprString(x))})
}

// calleeValue returns the function a function value names (cmp.Compare,
// possibly instantiated), or nil.
func calleeValue(info *types.Info, e ast.Expr) *types.Func {
	e = ast.Unparen(e)
	switch x := e.(type) {
	case *ast.IndexExpr:
		e = x.X
	case *ast.IndexListExpr:
		e = x.X
	}
	var id *ast.Ident
	switch x := e.(type) {
	case *ast.Ident:
		id = x
	case *ast.SelectorExpr:
		id = x.Sel
	}
	if id == nil {
		return nil
	}
	fn, _ := info.Uses[id].(*types.Func)
	if fn != nil {
		fn = fn.Origin()
	}
	return fn
}

// paramObjects returns the parameters of a function type.
func paramObjects(info *types.Info, ft *ast.FuncType) map[types.Object]bool {
	params := make(map[types.Object]bool)
	for _, field := range ft.Params.List {
		for _, name := range field.Names {
			params[info.ObjectOf(name)] = true
		}
	}
	return params
}

// lessMethod finds the declaration of the Less method of t in this package.
func lessMethod(pass *analysis.Pass, t types.Type) *ast.FuncDecl {
	obj, _, _ := types.LookupFieldOrMethod(t, true, pass.Pkg, "Less")
	fn, ok := obj.(*types.Func)
	if !ok || fn.Pkg() != pass.Pkg {
		return nil
	}
	for _, f := range pass.Files {
		for _, decl := range f.Decls {
			if fd, ok := decl.(*ast.FuncDecl); ok && pass.TypesInfo.Defs[fd.Name] == fn {
				return fd
			}
		}
	}
	return nil
}

// lastComparison returns the operands of the comparison that decides the
// order when everything before it is equal: the comparison in the last
// return statement of body, or the last argument of cmp.Or there.
func lastComparison(info *types.Info, body *ast.BlockStmt) (x, y ast.Expr, ok bool) {
	var last *ast.ReturnStmt
	ast.Inspect(body, func(n ast.Node) bool {
		if _, lit := n.(*ast.FuncLit); lit {
			return false
		}
		if r, isReturn := n.(*ast.ReturnStmt); isReturn && len(r.Results) == 1 {
			last = r
		}
		return true
	})
	if last == nil {
		return nil, nil, false
	}
	e := ast.Unparen(last.Results[0])
	for {
		switch v := e.(type) {
		case *ast.BinaryExpr:
			switch v.Op {
			case token.LSS, token.GTR, token.LEQ, token.GEQ, token.SUB:
				return v.X, v.Y, true
			case token.LOR, token.LAND:
				e = ast.Unparen(v.Y)
				continue
			}
			return nil, nil, false
		case *ast.CallExpr:
			fn := calleeOf(info, v)
			switch {
			case isPackageFunc(fn, "cmp", "Or") && len(v.Args) > 0:
				e = ast.Unparen(v.Args[len(v.Args)-1])
				continue
			case (isPackageFunc(fn, "cmp", "Compare") || isPackageFunc(fn, "strings", "Compare")) && len(v.Args) == 2:
				return v.Args[0], v.Args[1], true
			case fn != nil && fn.Name() == "Cmp" && len(v.Args) == 1:
				if sel, isSel := ast.Unparen(v.Fun).(*ast.SelectorExpr); isSel {
					return sel.X, v.Args[0], true
				}
			}
		}
		return nil, nil, false
	}
}

// uniqueKey reports whether e is a field that by convention holds a unique
// key: ID, Id, id, or a name ending in ID.
func uniqueKey(e ast.Expr) bool {
	sel, ok := ast.Unparen(e).(*ast.SelectorExpr)
	if !ok {
		return false
	}
	name := sel.Sel.Name
	return name == "id" || name == "Id" || strings.HasSuffix(name, "ID")
}

// isOrderedBasic reports whether t is a number or string type, whose equal
// values are indistinguishable.
func isOrderedBasic(t types.Type) bool {
	b, ok := t.Underlying().(*types.Basic)
	return ok && b.Info()&types.IsOrdered != 0
}
