package detcheck

import (
	"cmp"
	"fmt"
	"go/ast"
	"go/token"
	"go/types"
	"slices"
	"strings"

	"golang.org/x/tools/go/analysis"
)

// This file follows the calls: for every function of a package that is not
// marked, it computes which non-deterministic causes the function reaches
// (in its own body or through the functions it calls), and exports them as
// a fact on the function, so that a marked package calling it reports the
// cause at its call site.

// Fact lists the non-deterministic causes a function reaches, at most one
// per rule. It is exported on functions of packages that are not marked.
type Fact struct {
	Causes []Cause
}

// Cause is one root cause reached by a function.
type Cause struct {
	// Rule is the rule the cause breaks.
	Rule string
	// What names the cause: "range over map", "math.Sincos", "time.Now".
	What string
	// At is where the cause is, as "dir/file.go:line".
	At string
	// Path lists the functions from the one holding the fact down to the
	// one holding the cause, as "vec.Keys".
	Path []string
}

// AFact marks Fact as an analysis fact.
func (*Fact) AFact() {}

func (f *Fact) String() string {
	var parts []string
	for _, c := range f.Causes {
		parts = append(parts, c.Rule+": "+c.describe())
	}
	return "detcheck(" + strings.Join(parts, "; ") + ")"
}

// describe says "via vec.Keys → vec.collect: range over map at vec/vec.go:9".
func (c Cause) describe() string {
	return fmt.Sprintf("via %s: %s at %s", strings.Join(c.Path, " → "), c.What, c.At)
}

// pathSteps is the call path of a cause for a finding's path.
func (c Cause) pathSteps() []string {
	return append(slices.Clone(c.Path), c.What+" at "+c.At)
}

// factRules are the rules followed through calls.
var factRules = map[string]bool{
	RuleMapRange: true, RuleFloat: true, RuleClock: true, RuleRand: true,
	RuleMaphash: true, RulePointer: true, RuleEnv: true,
}

// funcCauses gathers the causes of one function while facts are computed.
type funcCauses struct {
	fn     *types.Func
	causes map[string]Cause // by rule
	calls  []*types.Func    // functions of the same package it calls
}

func (fc *funcCauses) add(c Cause) bool {
	if old, ok := fc.causes[c.Rule]; ok && len(old.Path) <= len(c.Path) {
		return false
	}
	fc.causes[c.Rule] = c
	return true
}

// exportFacts computes and exports the facts of the functions of a package
// that is not marked.
func exportFacts(pass *analysis.Pass, enabled map[string]bool, a *allows) {
	funcs := make(map[*types.Func]*funcCauses)
	pure := newPurity(pass)
	var order []*funcCauses
	for _, f := range pass.Files {
		if isTestFile(pass, f) {
			continue
		}
		of := &orderFree{info: pass.TypesInfo, pure: pure, next: nextStatements(f)}
		for _, decl := range f.Decls {
			fd, ok := decl.(*ast.FuncDecl)
			if !ok || fd.Body == nil {
				continue
			}
			fn, _ := pass.TypesInfo.Defs[fd.Name].(*types.Func)
			if fn == nil {
				continue
			}
			fc := &funcCauses{fn: fn, causes: make(map[string]Cause)}
			directCauses(pass, of, fd, fc, func(pos token.Pos, rule string) bool {
				return enabled[rule] && factRules[rule] && !a.allowed(pos, rule)
			})
			funcs[fn] = fc
			order = append(order, fc)
		}
	}
	// Propagate through the calls within the package until nothing changes.
	for changed := true; changed; {
		changed = false
		for _, fc := range order {
			for _, callee := range fc.calls {
				cc := funcs[callee]
				if cc == nil || cc == fc {
					continue
				}
				for _, c := range cc.causes {
					c.Path = append([]string{funcName(fc.fn)}, c.Path...)
					if fc.add(c) {
						changed = true
					}
				}
			}
		}
	}
	for _, fc := range order {
		if len(fc.causes) == 0 {
			continue
		}
		fact := &Fact{}
		for _, r := range Rules() {
			if c, ok := fc.causes[r]; ok {
				fact.Causes = append(fact.Causes, c)
			}
		}
		pass.ExportObjectFact(fc.fn, fact)
	}
}

// directCauses records the causes in the body of fd, and the calls to
// functions of the same package, in fc. keep tells whether a cause of a
// rule at a position counts.
func directCauses(pass *analysis.Pass, of *orderFree, fd *ast.FuncDecl, fc *funcCauses, keep func(token.Pos, string) bool) {
	info := pass.TypesInfo
	name := funcName(fc.fn)
	at := func(pos token.Pos) string {
		p := pass.Fset.Position(pos)
		return shortPos(p.Filename, p.Line)
	}
	add := func(pos token.Pos, rule, what string) {
		if keep(pos, rule) {
			fc.add(Cause{Rule: rule, What: what, At: at(pos), Path: []string{name}})
		}
	}
	// Float arithmetic counts in methods of a type with float state (a
	// vector type) and in functions returning floats.
	floatState, floatWhat := false, ""
	if recv := fc.fn.Signature().Recv(); recv != nil && hasFloatState(recv.Type()) {
		floatState, floatWhat = true, "float arithmetic on "+typeName(recv.Type())
	}
	for v := range fc.fn.Signature().Results().Variables() {
		if !floatState && hasFloatState(v.Type()) {
			floatState, floatWhat = true, "float arithmetic in "+name
		}
	}
	inspectStack(fd.Body, func(n ast.Node, stack []ast.Node) bool {
		parent := ancestor(stack, 2)
		switch n := n.(type) {
		case *ast.RangeStmt:
			if allTerms(info.TypeOf(n.X), isMap) && !of.mapRangeHarmless(n) {
				add(n.Pos(), RuleMapRange, "range over map")
			}
		case *ast.CallExpr:
			if msg := pointerUse(info, n); msg != "" {
				add(n.Pos(), RulePointer, "%p or uintptr of a pointer")
			}
			callee := calleeOf(info, n)
			if callee == nil || callee.Pkg() == nil {
				return true
			}
			switch {
			case isTranscendental(callee):
				add(n.Pos(), RuleFloat, "math."+callee.Name())
			case callee.Pkg() == pass.Pkg:
				fc.calls = append(fc.calls, callee)
			default:
				var fact Fact
				if pass.ImportObjectFact(callee, &fact) && !(mapOrderOnly(&fact) && of.resultSorted(n, parent, enclosingStmt(stack))) {
					for _, c := range fact.Causes {
						if keep(n.Pos(), c.Rule) {
							c.Path = append([]string{name}, c.Path...)
							fc.add(c)
						}
					}
				}
			}
		case *ast.Ident:
			if rule, _ := source(info.Uses[n]); rule != "" {
				if rule == RuleMapRange {
					if call, ok := parent.(*ast.CallExpr); ok && of.resultSorted(call, grandparent(stack), enclosingStmt(stack)) {
						return true
					}
					if sel, ok := parent.(*ast.SelectorExpr); ok && len(stack) >= 3 {
						if call, ok := stack[len(stack)-3].(*ast.CallExpr); ok && call.Fun == sel && of.resultSorted(call, ancestor(stack, 4), enclosingStmt(stack)) {
							return true
						}
					}
				}
				add(n.Pos(), rule, objectName(info.Uses[n]))
			}
		case *ast.BinaryExpr:
			if floatState && isFloatArith(info, n) {
				add(n.Pos(), RuleFloat, floatWhat)
			}
		case *ast.AssignStmt:
			if floatState && n.Tok != token.ASSIGN && n.Tok != token.DEFINE && len(n.Lhs) == 1 && isFloat(info.TypeOf(n.Lhs[0])) {
				add(n.Pos(), RuleFloat, floatWhat)
			}
		}
		return true
	})
	slices.SortFunc(fc.calls, func(a, b *types.Func) int { return cmp.Compare(a.Pos(), b.Pos()) })
	fc.calls = slices.Compact(fc.calls)
}

// mapOrderOnly reports whether every cause of a fact is map order, which
// sorting the result makes harmless.
func mapOrderOnly(f *Fact) bool {
	for _, c := range f.Causes {
		if c.Rule != RuleMapRange {
			return false
		}
	}
	return len(f.Causes) > 0
}

// isFloatArith reports whether e is float arithmetic (+, -, *, /) on typed
// values that is not a constant.
func isFloatArith(info *types.Info, e *ast.BinaryExpr) bool {
	switch e.Op {
	case token.ADD, token.SUB, token.MUL, token.QUO:
	default:
		return false
	}
	return info.Types[e].Value == nil && (isTypedFloat(info.TypeOf(e.X)) || isTypedFloat(info.TypeOf(e.Y)))
}

// typeName names a receiver type as "vec.Vec".
func typeName(t types.Type) string {
	if p, ok := t.(*types.Pointer); ok {
		t = p.Elem()
	}
	if named, ok := types.Unalias(t).(*types.Named); ok && named.Obj().Pkg() != nil {
		return named.Obj().Pkg().Name() + "." + named.Obj().Name()
	}
	return t.String()
}

// enclosingStmt returns the innermost statement on the stack, or nil.
func enclosingStmt(stack []ast.Node) ast.Stmt {
	for i := len(stack) - 1; i >= 0; i-- {
		if s, ok := stack[i].(ast.Stmt); ok {
			if _, block := s.(*ast.BlockStmt); !block {
				return s
			}
		}
	}
	return nil
}

func grandparent(stack []ast.Node) ast.Node { return ancestor(stack, 3) }

// ancestor returns stack[len-k] or nil: k=1 is the node itself.
func ancestor(stack []ast.Node, k int) ast.Node {
	if len(stack) < k {
		return nil
	}
	return stack[len(stack)-k]
}

// inspectStack walks the tree rooted at root as ast.PreorderStack does,
// but the stack it passes f ends with n itself, as ancestor,
// enclosingStmt and inLoop count. f must not keep the stack.
func inspectStack(root ast.Node, f func(n ast.Node, stack []ast.Node) bool) {
	ast.PreorderStack(root, nil, func(n ast.Node, stack []ast.Node) bool {
		// PreorderStack pushes n at this very index when f returns true,
		// so appending here writes what it would write.
		return f(n, append(stack, n))
	})
}
