package detcheck

import (
	"go/ast"
	"go/types"
)

// This file holds what the map-order checks share: the statement after
// each statement, and whether a result in map order is sorted before use.
// loopbody.go decides whether a map range's body depends on the order.

// orderFree tells whether map ranges and map-order calls are harmless.
type orderFree struct {
	info *types.Info
	// pure knows the package's pure functions, which a loop body may call.
	pure *purity
	// next maps a statement to the one after it in its block.
	next map[ast.Stmt]ast.Stmt
}

// nextStatements maps every statement in n to the statement after it in
// its block or case clause.
func nextStatements(n ast.Node) map[ast.Stmt]ast.Stmt {
	next := make(map[ast.Stmt]ast.Stmt)
	link := func(list []ast.Stmt) {
		for i := 0; i+1 < len(list); i++ {
			next[list[i]] = list[i+1]
		}
	}
	ast.Inspect(n, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.BlockStmt:
			link(n.List)
		case *ast.CaseClause:
			link(n.Body)
		case *ast.CommClause:
			link(n.Body)
		}
		return true
	})
	return next
}

// sortedSlice returns the variable that stmt sorts in place (slices.Sort(s),
// sort.Strings(s), ...), or nil.
func (o *orderFree) sortedSlice(stmt ast.Stmt) types.Object {
	es, ok := stmt.(*ast.ExprStmt)
	if !ok {
		return nil
	}
	call, ok := es.X.(*ast.CallExpr)
	if !ok || len(call.Args) == 0 {
		return nil
	}
	fn := calleeOf(o.info, call)
	if !isPackageFunc(fn, "slices", "Sort", "SortFunc", "SortStableFunc") &&
		!isPackageFunc(fn, "sort", "Strings", "Ints", "Float64s", "Slice", "SliceStable") {
		return nil
	}
	id, ok := ast.Unparen(call.Args[0]).(*ast.Ident)
	if !ok {
		return nil
	}
	return o.info.ObjectOf(id)
}

// resultSorted reports whether the value of call, a call returning map
// order, is sorted before use: passed straight to slices.Sorted and its
// kin, or assigned to a variable that the next statement sorts.
func (o *orderFree) resultSorted(call *ast.CallExpr, parent ast.Node, stmt ast.Stmt) bool {
	if outer, ok := parent.(*ast.CallExpr); ok && isPackageFunc(calleeOf(o.info, outer), "slices", "Sorted", "SortedFunc", "SortedStableFunc", "Collect") {
		if isPackageFunc(calleeOf(o.info, outer), "slices", "Collect") {
			return false
		}
		return true
	}
	as, ok := stmt.(*ast.AssignStmt)
	if !ok || len(as.Lhs) != 1 || len(as.Rhs) != 1 || ast.Unparen(as.Rhs[0]) != call {
		return false
	}
	id, ok := as.Lhs[0].(*ast.Ident)
	if !ok {
		return false
	}
	sorted := o.sortedSlice(o.next[stmt])
	return sorted != nil && sorted == o.info.ObjectOf(id)
}
