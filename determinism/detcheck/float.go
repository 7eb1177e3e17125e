package detcheck

import (
	"cmp"
	"fmt"
	"go/ast"
	"go/token"
	"go/types"
	"maps"
	"slices"
	"strings"

	"golang.org/x/tools/go/analysis"
)

// This file holds the float rule. Floating-point operations are exact
// enough within one machine, but their results may differ between
// architectures (fused multiply-add, the assembly of math.Sin and its kin)
// and between the float code of other packages. What matters is whether a
// computed float value reaches the simulation: it is stored outside the
// function's own locals, decides a branch, is returned by an exported
// function, or is sent on a channel. Values never computed on (constants,
// fields copied as they are, integers converted to floats) and values that
// only reach calls into other packages (drawing, formatting) are not
// findings. A finding is reported once per statement that computes, naming
// every float operation in it.

// originSet holds the statements whose float operations a value depends on.
type originSet map[ast.Node]bool

func union(sets ...originSet) originSet {
	var out originSet
	for _, s := range sets {
		for o := range s {
			if out == nil {
				out = make(originSet)
			}
			out[o] = true
		}
	}
	return out
}

// floatCheck runs the float rule over one marked package.
type floatCheck struct {
	pass *analysis.Pass
	info *types.Info

	ops   map[ast.Node][]string // origin statement → operations it holds
	paths map[ast.Node][]string // origin statement → call path of its first cause
	sinks map[ast.Node]string   // origin statement → how it reaches the state
	// home maps an origin statement to the function it is in.
	home map[ast.Node]*types.Func

	// params and returns carry values between the functions of the package.
	params  map[*types.Var]originSet
	returns map[*types.Func]originSet
	changed bool

	// The function being analysed.
	fn     *types.Func
	locals map[*types.Var]originSet
	// integralVars tells which local floats hold only whole numbers.
	integralVars map[*types.Var]int8
	fresh        map[*types.Var]bool
	cur          ast.Node // the statement being evaluated
	litDept      int
}

// checkFloat runs the float rule over the files of a marked package.
func checkFloat(pass *analysis.Pass, rep *reporter, files []*ast.File) {
	c := &floatCheck{
		pass: pass, info: pass.TypesInfo,
		ops: make(map[ast.Node][]string), paths: make(map[ast.Node][]string),
		sinks: make(map[ast.Node]string), home: make(map[ast.Node]*types.Func),
		params: make(map[*types.Var]originSet), returns: make(map[*types.Func]originSet),
	}
	for round := 0; round < 8; round++ {
		c.changed = false
		for _, f := range files {
			for _, decl := range f.Decls {
				c.decl(decl)
			}
		}
		if !c.changed {
			break
		}
	}
	origins := slices.SortedFunc(maps.Keys(c.sinks), func(a, b ast.Node) int { return cmp.Compare(a.Pos(), b.Pos()) })
	for _, o := range origins {
		if len(c.ops[o]) == 0 {
			continue
		}
		rep.add(finding{
			pos:  o.Pos(),
			rule: RuleFloat,
			msg:  fmt.Sprintf("float computation (%s) %s; use determinism fixed-point", describeOps(c.ops[o]), c.sinks[o]),
			path: c.paths[o],
		})
	}
}

// describeOps names the operations of one statement: "*, +, math.Sincos".
func describeOps(ops []string) string {
	var names []string
	for _, op := range ops {
		names = append(names, strings.TrimPrefix(op, "float "))
	}
	return strings.Join(names, ", ")
}

func (c *floatCheck) decl(decl ast.Decl) {
	switch d := decl.(type) {
	case *ast.FuncDecl:
		if d.Body == nil {
			return
		}
		c.fn, _ = c.info.Defs[d.Name].(*types.Func)
		c.locals = make(map[*types.Var]originSet)
		c.integralVars = make(map[*types.Var]int8)
		c.fresh = make(map[*types.Var]bool)
		for range 2 { // twice, for values carried round loops
			c.stmt(d.Body)
		}
	case *ast.GenDecl:
		c.fn = nil
		for _, spec := range d.Specs {
			vs, ok := spec.(*ast.ValueSpec)
			if !ok {
				continue
			}
			c.cur = vs
			for _, v := range vs.Values {
				c.sink(c.eval(v), "initialises a package variable")
			}
		}
	}
}

// op records an operation of the current statement.
func (c *floatCheck) op(name string, path []string) originSet {
	if !slices.Contains(c.ops[c.cur], name) {
		c.ops[c.cur] = append(c.ops[c.cur], name)
	}
	c.home[c.cur] = c.fn
	if path != nil && c.paths[c.cur] == nil {
		c.paths[c.cur] = path
	}
	return originSet{c.cur: true}
}

// sink records that the values of set reach the simulation.
func (c *floatCheck) sink(set originSet, how string) {
	for o := range set {
		if _, ok := c.sinks[o]; ok {
			continue
		}
		switch {
		case c.fn != nil && c.home[o] != c.fn && how == "is returned by "+funcName(c.fn):
			c.sinks[o] = "flows into " + funcName(c.fn) + ", which returns it"
		case c.fn != nil && c.home[o] != c.fn:
			c.sinks[o] = "flows into " + funcName(c.fn) + ", where it " + how
		default:
			c.sinks[o] = how
		}
	}
}

func (c *floatCheck) stmts(list []ast.Stmt) {
	for _, s := range list {
		c.stmt(s)
	}
}

func (c *floatCheck) stmt(s ast.Stmt) {
	if s == nil {
		return
	}
	switch s := s.(type) {
	case *ast.BlockStmt:
		c.stmts(s.List)
	case *ast.LabeledStmt:
		c.stmt(s.Stmt)
	case *ast.AssignStmt:
		c.cur = s
		if len(s.Lhs) != len(s.Rhs) {
			val := c.eval(s.Rhs[0])
			for _, l := range s.Lhs {
				c.noteIntegral(l, nil, s.Tok)
				c.assign(l, val, s.Tok)
			}
			return
		}
		for i, l := range s.Lhs {
			val := c.eval(s.Rhs[i])
			exact := c.noteIntegral(l, s.Rhs[i], s.Tok)
			if s.Tok != token.ASSIGN && s.Tok != token.DEFINE {
				val = union(val, c.eval(l))
				if isTypedFloat(c.info.TypeOf(l)) && !exact {
					val = union(val, c.op("float "+s.Tok.String(), nil))
				}
			}
			if s.Tok == token.DEFINE && c.freshValue(s.Rhs[i]) {
				if v, ok := c.info.Defs[identOf(l)].(*types.Var); ok {
					c.fresh[v] = true
				}
			}
			c.assign(l, val, s.Tok)
		}
	case *ast.IncDecStmt:
		c.cur = s
		val := c.eval(s.X)
		if isTypedFloat(c.info.TypeOf(s.X)) && !c.integral(s.X) {
			val = union(val, c.op("float "+s.Tok.String(), nil))
		}
		c.assign(s.X, val, token.ASSIGN)
	case *ast.DeclStmt:
		gd, ok := s.Decl.(*ast.GenDecl)
		if !ok {
			return
		}
		c.cur = s
		for _, spec := range gd.Specs {
			vs, ok := spec.(*ast.ValueSpec)
			if !ok {
				continue
			}
			for i, name := range vs.Names {
				v, _ := c.info.Defs[name].(*types.Var)
				if v == nil {
					continue
				}
				if i >= len(vs.Values) {
					c.fresh[v] = true
					continue
				}
				if c.freshValue(vs.Values[i]) {
					c.fresh[v] = true
				}
				c.noteIntegral(name, vs.Values[i], token.DEFINE)
				c.assign(name, c.eval(vs.Values[i]), token.DEFINE)
			}
		}
	case *ast.ExprStmt:
		c.cur = s
		c.eval(s.X)
	case *ast.GoStmt:
		c.cur = s
		c.eval(s.Call)
	case *ast.DeferStmt:
		c.cur = s
		c.eval(s.Call)
	case *ast.SendStmt:
		c.cur = s
		c.sink(c.eval(s.Value), "is sent on a channel")
	case *ast.ReturnStmt:
		c.cur = s
		var val originSet
		for _, r := range s.Results {
			val = union(val, c.eval(r))
		}
		c.returned(val)
	case *ast.IfStmt:
		c.stmt(s.Init)
		c.cur = s
		c.sink(c.eval(s.Cond), "decides a branch")
		c.stmt(s.Body)
		c.stmt(s.Else)
	case *ast.ForStmt:
		c.stmt(s.Init)
		c.cur = s
		c.sink(c.eval(s.Cond), "decides a loop")
		c.stmt(s.Body)
		c.stmt(s.Post)
	case *ast.RangeStmt:
		c.cur = s
		val := c.eval(s.X)
		for _, kv := range []ast.Expr{s.Key, s.Value} {
			if kv != nil {
				c.noteIntegral(kv, nil, token.ASSIGN)
				c.assign(kv, val, s.Tok)
			}
		}
		c.stmt(s.Body)
	case *ast.SwitchStmt:
		c.stmt(s.Init)
		c.cur = s
		c.sink(c.eval(s.Tag), "decides a switch")
		for _, cc := range s.Body.List {
			clause := cc.(*ast.CaseClause)
			c.cur = clause
			for _, e := range clause.List {
				c.sink(c.eval(e), "decides a switch")
			}
			c.stmts(clause.Body)
		}
	case *ast.TypeSwitchStmt:
		c.stmt(s.Init)
		c.stmt(s.Assign)
		for _, cc := range s.Body.List {
			c.stmts(cc.(*ast.CaseClause).Body)
		}
	case *ast.SelectStmt:
		for _, cc := range s.Body.List {
			clause := cc.(*ast.CommClause)
			c.stmt(clause.Comm)
			c.stmts(clause.Body)
		}
	}
}

// returned handles the values of a return statement.
func (c *floatCheck) returned(val originSet) {
	switch {
	case len(val) == 0:
	case c.litDept > 0:
		c.sink(val, "is returned by a function literal")
	case c.fn == nil:
	case !c.fn.Exported():
		c.grow(&c.returns, c.fn, val)
	default:
		c.sink(val, "is returned by "+funcName(c.fn))
	}
}

// grow adds val to m[k], noting a change.
func grow[K comparable](m *map[K]originSet, k K, val originSet) {
	old := (*m)[k]
	for o := range val {
		if !old[o] {
			if old == nil {
				old = make(originSet)
				(*m)[k] = old
			}
			old[o] = true
		}
	}
}

func (c *floatCheck) grow(m *map[*types.Func]originSet, k *types.Func, val originSet) {
	before := len((*m)[k])
	grow(m, k, val)
	if len((*m)[k]) != before {
		c.changed = true
	}
}

func (c *floatCheck) growParam(v *types.Var, val originSet) {
	before := len(c.params[v])
	grow(&c.params, v, val)
	if len(c.params[v]) != before {
		c.changed = true
	}
}

// assign handles a store of val into lhs.
func (c *floatCheck) assign(lhs ast.Expr, val originSet, tok token.Token) {
	if len(val) == 0 || isBlank(lhs) {
		return
	}
	local, state := c.target(lhs)
	switch {
	case state:
		c.sink(val, "is stored in "+types.ExprString(lhs))
	case local != nil:
		c.locals[local] = union(c.locals[local], val)
	}
}

// target tells where a store into lhs goes: into a local variable (or a
// fresh object only the function holds), or into the simulation state.
func (c *floatCheck) target(lhs ast.Expr) (local *types.Var, state bool) {
	through := false // the path goes through a pointer, slice or map
	e := lhs
	for {
		switch x := ast.Unparen(e).(type) {
		case *ast.Ident:
			v, ok := c.info.ObjectOf(x).(*types.Var)
			if !ok {
				return nil, false
			}
			if !c.isLocal(v) || through && !c.fresh[v] {
				return nil, true
			}
			return v, false
		case *ast.SelectorExpr:
			if _, isPkg := c.info.Uses[identOf(x.X)].(*types.PkgName); isPkg {
				return nil, true
			}
			if isReference(c.info.TypeOf(x.X)) {
				through = true
			}
			e = x.X
		case *ast.IndexExpr:
			if t := c.info.TypeOf(x.X); isReference(t) {
				through = true
			}
			e = x.X
		case *ast.StarExpr:
			through = true
			e = x.X
		default:
			return nil, true
		}
	}
}

// isLocal reports whether v is a variable of a function of this package.
func (c *floatCheck) isLocal(v *types.Var) bool {
	return v.Pkg() == c.pass.Pkg && !v.IsField() && v.Parent() != nil && v.Parent() != c.pass.Pkg.Scope()
}

// freshValue reports whether e makes a new object that only its holder
// reaches: a composite literal, new, make, or a call into another package.
func (c *floatCheck) freshValue(e ast.Expr) bool {
	switch x := ast.Unparen(e).(type) {
	case *ast.CompositeLit:
		return true
	case *ast.UnaryExpr:
		_, lit := ast.Unparen(x.X).(*ast.CompositeLit)
		return x.Op == token.AND && lit
	case *ast.CallExpr:
		if b, ok := c.info.Uses[identOf(x.Fun)].(*types.Builtin); ok {
			return b.Name() == "new" || b.Name() == "make"
		}
		fn := calleeOf(c.info, x)
		return fn != nil && fn.Pkg() != nil && fn.Pkg() != c.pass.Pkg
	}
	return false
}
