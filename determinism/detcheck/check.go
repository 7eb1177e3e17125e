package detcheck

import (
	"go/ast"
	"strings"

	"golang.org/x/tools/go/analysis"
)

// checkPackage checks the non-test files of a marked package.
func checkPackage(pass *analysis.Pass, rep *reporter) {
	var files []*ast.File
	for _, f := range pass.Files {
		if !isTestFile(pass, f) {
			files = append(files, f)
		}
	}
	pure := newPurity(pass)
	for _, f := range files {
		checkFile(pass, rep, pure, f)
		checkConcurrency(pass, rep, pure, f)
	}
	if rep.on(RuleFloat) {
		checkFloat(pass, rep, files)
	}
}

func checkFile(pass *analysis.Pass, rep *reporter, pure *purity, f *ast.File) {
	info := pass.TypesInfo
	of := &orderFree{info: info, pure: pure, next: nextStatements(f)}
	for _, spec := range f.Imports {
		if strings.Trim(spec.Path.Value, "\"`") == "unsafe" {
			rep.add(finding{pos: spec.Pos(), rule: RuleUnsafe,
				msg: "import of unsafe: memory layout and pointer values are not portable between peers"})
		}
	}
	inspectStack(f, func(n ast.Node, stack []ast.Node) bool {
		parent := ancestor(stack, 2)
		stmt := enclosingStmt(stack)
		switch n := n.(type) {
		case *ast.RangeStmt:
			if allTerms(info.TypeOf(n.X), isMap) && !of.mapRangeHarmless(n) {
				rep.add(finding{pos: n.Pos(), rule: RuleMapRange,
					msg: "range over map: iteration order is random and this loop depends on it; use determinism.SortedKeys"})
			}
		case *ast.CallExpr:
			if msg := pointerUse(info, n); msg != "" {
				rep.add(finding{pos: n.Pos(), rule: RulePointer, msg: msg, stmt: stmt})
			}
			checkSort(pass, rep, n)
			checkCallee(pass, rep, of, n, parent, stmt)
		case *ast.Ident:
			obj := info.Uses[n]
			rule, msg := source(obj)
			if rule == "" {
				return true
			}
			if rule == RuleMapRange {
				if call, ok := parent.(*ast.CallExpr); ok && call.Fun == n && of.resultSorted(call, ancestor(stack, 3), stmt) {
					return true
				}
				if sel, ok := parent.(*ast.SelectorExpr); ok {
					if call, ok := ancestor(stack, 3).(*ast.CallExpr); ok && call.Fun == sel && of.resultSorted(call, ancestor(stack, 4), stmt) {
						return true
					}
				}
			}
			pos := n.Pos()
			if sel, ok := parent.(*ast.SelectorExpr); ok && sel.Sel == n {
				pos = sel.Pos()
			}
			rep.add(finding{pos: pos, rule: rule, msg: msg, stmt: stmt})
		}
		return true
	})
}

// checkCallee reports the causes a function of another package reaches,
// at the call. Float causes are left to the float rule, which reports them
// only where their values reach the simulation state.
func checkCallee(pass *analysis.Pass, rep *reporter, of *orderFree, call *ast.CallExpr, parent ast.Node, stmt ast.Stmt) {
	callee := calleeOf(pass.TypesInfo, call)
	if callee == nil || callee.Pkg() == nil || callee.Pkg() == pass.Pkg {
		return
	}
	var fact Fact
	if !pass.ImportObjectFact(callee, &fact) {
		return
	}
	if mapOrderOnly(&fact) && of.resultSorted(call, parent, stmt) {
		return
	}
	for _, c := range fact.Causes {
		if c.Rule == RuleFloat {
			continue
		}
		rep.add(finding{
			pos:  call.Pos(),
			rule: c.Rule,
			msg:  ruleSummary[c.Rule] + " " + c.describe(),
			path: c.pathSteps(),
			stmt: stmt,
		})
	}
}

// ruleSummary starts the message of a finding reached through calls.
var ruleSummary = map[string]string{
	RuleMapRange: "map order",
	RuleClock:    "the real clock",
	RuleRand:     "randomness not derived from the session seed",
	RuleMaphash:  "a per-process hash seed",
	RulePointer:  "a memory address",
	RuleEnv:      "the runtime environment",
}
