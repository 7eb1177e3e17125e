package detcheck

import (
	"go/ast"
	"go/constant"
	"go/token"
	"go/types"
)

// This file recognises integer-valued float computation: integers
// converted to floats, whole constants, and sums, differences and products
// of those, as path costs on a grid are. Such arithmetic is exact (below
// 2^53) and gives the same result everywhere, so it is not a float
// operation for the float rule.

// integral reports whether e is a float expression whose value is a whole
// number computed exactly.
func (c *floatCheck) integral(e ast.Expr) bool {
	if tv, ok := c.info.Types[e]; ok && tv.Value != nil {
		v := constant.ToInt(tv.Value)
		return v.Kind() == constant.Int
	}
	switch x := ast.Unparen(e).(type) {
	case *ast.Ident:
		v, ok := c.info.Uses[x].(*types.Var)
		return ok && c.integralVars[v] == integralYes
	case *ast.BinaryExpr:
		switch x.Op {
		case token.ADD, token.SUB, token.MUL:
			return c.integral(x.X) && c.integral(x.Y)
		}
	case *ast.UnaryExpr:
		return (x.Op == token.SUB || x.Op == token.ADD) && c.integral(x.X)
	case *ast.CallExpr:
		if tv := c.info.Types[x.Fun]; tv.IsType() && len(x.Args) == 1 {
			return isInteger(c.info.TypeOf(x.Args[0])) || isFloat(tv.Type) && c.integral(x.Args[0])
		}
		if b, ok := c.info.Uses[identOf(x.Fun)].(*types.Builtin); ok && (b.Name() == "min" || b.Name() == "max") {
			for _, a := range x.Args {
				if !c.integral(a) {
					return false
				}
			}
			return true
		}
		if fn := calleeOf(c.info, x); isPackageFunc(fn, "math", "Floor", "Ceil", "Trunc", "Round", "RoundToEven") {
			return true
		}
	}
	return false
}

// The states of a local float variable.
const (
	integralUnknown int8 = iota
	integralYes          // every value assigned so far is integral
	integralNo
)

// noteIntegral records whether a store of rhs (op-assigned with tok) into
// lhs keeps lhs integral, and reports whether the op-assignment itself is
// exact.
func (c *floatCheck) noteIntegral(lhs, rhs ast.Expr, tok token.Token) (exact bool) {
	whole := rhs != nil && c.integral(rhs)
	switch tok {
	case token.ADD_ASSIGN, token.SUB_ASSIGN, token.MUL_ASSIGN:
		whole = whole && c.integral(lhs)
		exact = whole
	case token.ASSIGN, token.DEFINE:
	default:
		whole = false
	}
	id, ok := ast.Unparen(lhs).(*ast.Ident)
	if !ok {
		return exact
	}
	v, ok := c.info.ObjectOf(id).(*types.Var)
	if !ok {
		return exact
	}
	switch {
	case !whole:
		c.integralVars[v] = integralNo
	case c.integralVars[v] == integralUnknown:
		c.integralVars[v] = integralYes
	}
	return exact
}
