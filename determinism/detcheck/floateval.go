package detcheck

import (
	"go/ast"
	"go/token"
	"go/types"
)

// eval returns the origins of the float computation the value of e
// depends on, recording the operations of e on the current statement.
func (c *floatCheck) eval(e ast.Expr) originSet {
	if e == nil {
		return nil
	}
	if tv, ok := c.info.Types[e]; ok && (tv.Value != nil || tv.IsType()) {
		return nil
	}
	switch x := e.(type) {
	case *ast.ParenExpr:
		return c.eval(x.X)
	case *ast.Ident:
		v, ok := c.info.Uses[x].(*types.Var)
		if !ok {
			return nil
		}
		return union(c.locals[v], c.params[v])
	case *ast.BinaryExpr:
		val := union(c.eval(x.X), c.eval(x.Y))
		if isFloatArith(c.info, x) && !(x.Op != token.QUO && c.integral(x.X) && c.integral(x.Y)) {
			val = union(val, c.op("float "+x.Op.String(), nil))
		}
		return val
	case *ast.UnaryExpr:
		return c.eval(x.X)
	case *ast.StarExpr:
		return c.eval(x.X)
	case *ast.SelectorExpr:
		if _, isPkg := c.info.Uses[identOf(x.X)].(*types.PkgName); isPkg {
			return nil
		}
		return c.eval(x.X)
	case *ast.IndexExpr:
		return union(c.eval(x.X), c.eval(x.Index))
	case *ast.IndexListExpr:
		return c.eval(x.X)
	case *ast.SliceExpr:
		return union(c.eval(x.X), c.eval(x.Low), c.eval(x.High), c.eval(x.Max))
	case *ast.TypeAssertExpr:
		return c.eval(x.X)
	case *ast.CompositeLit:
		var val originSet
		for _, elt := range x.Elts {
			val = union(val, c.eval(elt))
		}
		return val
	case *ast.KeyValueExpr:
		return c.eval(x.Value)
	case *ast.FuncLit:
		saved := c.cur
		c.litDept++
		c.stmt(x.Body)
		c.litDept--
		c.cur = saved
		return nil
	case *ast.CallExpr:
		return c.call(x)
	}
	return nil
}

// call evaluates a call: conversions and builtins pass their operands on,
// math's transcendental functions and float functions of other packages
// are operations, and calls within the package carry values into
// parameters and out of results.
func (c *floatCheck) call(call *ast.CallExpr) originSet {
	var args []originSet
	var all originSet
	for _, a := range call.Args {
		v := c.eval(a)
		args = append(args, v)
		all = union(all, v)
	}
	if tv := c.info.Types[call.Fun]; tv.IsType() {
		return all
	}
	if _, ok := c.info.Uses[identOf(call.Fun)].(*types.Builtin); ok {
		return all
	}
	fn := calleeOf(c.info, call)
	var recv ast.Expr
	if sel, ok := ast.Unparen(call.Fun).(*ast.SelectorExpr); ok && fn != nil && fn.Signature().Recv() != nil {
		recv = sel.X
		all = union(all, c.eval(sel.X))
	} else if fn == nil {
		all = union(all, c.eval(call.Fun))
	}
	switch {
	case fn == nil || fn.Pkg() == nil:
		return all
	case isTranscendental(fn):
		return union(all, c.op("math."+fn.Name(), nil))
	case fn.Pkg() == c.pass.Pkg:
		sig := fn.Signature()
		if recv != nil && sig.Recv() != nil {
			c.growParam(sig.Recv(), c.eval(recv))
		}
		for i, v := range args {
			if len(v) == 0 || sig.Params().Len() == 0 {
				continue
			}
			c.growParam(sig.Params().At(min(i, sig.Params().Len()-1)), v)
		}
		return c.returns[fn]
	}
	var fact Fact
	if c.pass.ImportObjectFact(fn, &fact) {
		for _, cause := range fact.Causes {
			if cause.Rule == RuleFloat {
				all = union(all, c.op(funcName(fn)+" ("+cause.What+" at "+cause.At+")", cause.pathSteps()))
			}
		}
	}
	if recv != nil && len(all) > 0 {
		if _, isPtr := fn.Signature().Recv().Type().(*types.Pointer); isPtr {
			if _, state := c.target(recv); state {
				c.sink(all, "changes "+types.ExprString(recv)+" through "+funcName(fn))
			}
		}
	}
	return all
}
