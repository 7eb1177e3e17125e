package detcheck

import (
	"cmp"
	"go/ast"
	"go/token"
	"slices"
	"strings"

	"golang.org/x/tools/go/analysis"
)

// finding is one diagnostic before suppression and merging.
type finding struct {
	pos  token.Pos
	rule string
	msg  string
	// path is the call path from the call site to the root cause, for a
	// finding reached through calls: the functions called, then where the
	// cause is ("range over map at vec/vec.go:9").
	path []string
	// stmt is the statement holding the finding, or nil. Findings of the
	// source rules (clock, rand, env, ...) in one statement share a root
	// cause and are merged into one.
	stmt ast.Node
}

// sourceRules are the rules whose findings in one statement are merged:
// rand.Seed(time.Now().UnixNano()) is one bug, not two.
var sourceRules = map[string]bool{
	RuleClock: true, RuleRand: true, RuleMaphash: true, RuleEnv: true, RulePointer: true,
}

// reporter collects the findings of one package, drops the disabled and
// allowed ones, merges those with one root cause and reports the rest.
type reporter struct {
	pass     *analysis.Pass
	enabled  map[string]bool
	allows   *allows
	findings []finding
}

func newReporter(pass *analysis.Pass, enabled map[string]bool, a *allows) *reporter {
	return &reporter{pass: pass, enabled: enabled, allows: a}
}

// on reports whether rule is enabled.
func (r *reporter) on(rule string) bool { return r.enabled[rule] }

// suppressed reports whether a finding of rule at pos would not be
// reported, being disabled or allowed.
func (r *reporter) suppressed(pos token.Pos, rule string) bool {
	return !r.enabled[rule] || r.allows.allowed(pos, rule)
}

func (r *reporter) add(f finding) {
	if r.suppressed(f.pos, f.rule) {
		return
	}
	r.findings = append(r.findings, f)
}

// flush reports the collected findings, in position order.
func (r *reporter) flush() {
	fs := r.findings
	slices.SortStableFunc(fs, func(a, b finding) int { return cmp.Compare(a.pos, b.pos) })
	merged := make(map[ast.Node]int) // statement → index in out of its source finding
	var out []finding
	for _, f := range fs {
		if f.stmt != nil && sourceRules[f.rule] {
			if i, ok := merged[f.stmt]; ok {
				if !strings.Contains(out[i].msg, f.msg) {
					out[i].msg += "; " + f.msg
				}
				continue
			}
			merged[f.stmt] = len(out)
		}
		if n := len(out); n > 0 && out[n-1].pos == f.pos && out[n-1].rule == f.rule && out[n-1].msg == f.msg {
			continue
		}
		out = append(out, f)
	}
	for _, f := range out {
		d := analysis.Diagnostic{
			Pos:      f.pos,
			Category: f.rule,
			Message:  "detcheck: " + f.msg + " [" + f.rule + "]",
		}
		for _, step := range f.path {
			d.Related = append(d.Related, analysis.RelatedInformation{Pos: f.pos, Message: step})
		}
		r.pass.Report(d)
	}
	r.findings = nil
}

// CallPath returns the call path of a diagnostic of the analyzer that was
// found through calls into other packages: the functions called, outermost
// first, then where the root cause is. It is empty for a finding in the
// code of the package itself.
func CallPath(d analysis.Diagnostic) []string {
	var path []string
	for _, r := range d.Related {
		path = append(path, r.Message)
	}
	return path
}
