package detcheck_test

import (
	"testing"

	"golang.org/x/tools/go/analysis/analysistest"

	"github.com/phalanx-net/phalanx/determinism/detcheck"
)

// TestAnalyzer checks the // want comments of every testdata package in one
// load:
//   - one package per rule, each expected to report under that rule;
//   - unmarked and notmarked carry flagged constructs but no want comments,
//     so any finding in them fails the test;
//   - markedlater is marked by its second file only, and its test file is not
//     checked;
//   - allow exercises //phalanx:allow, well-formed and malformed.
func TestAnalyzer(t *testing.T) {
	ruleOf := map[string]string{
		"maprange":   "maprange",
		"float":      "float",
		"clock":      "clock",
		"randuse":    "rand",
		"maphashuse": "maphash",
		"goroutine":  "goroutine",
		"selectstmt": "select",
		"chanops":    "chan",
		"env":        "env",
		"unsafeuse":  "unsafe",
		"allow":      "allow",
	}
	pkgs := []string{"unmarked", "notmarked", "markedlater"}
	for pkg := range ruleOf {
		pkgs = append(pkgs, pkg)
	}
	results := analysistest.Run(t, analysistest.TestData(), detcheck.Analyzer, pkgs...)

	found := make(map[string]bool) // package path and category
	for _, result := range results {
		for _, d := range result.Diagnostics {
			found[result.Pass.Pkg.Path()+" "+d.Category] = true
		}
	}
	for pkg, rule := range ruleOf {
		if !found[pkg+" "+rule] {
			t.Errorf("package %s: no finding with category %q", pkg, rule)
		}
	}
}
