package detcheck_test

import (
	"flag"
	"fmt"
	"go/ast"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"golang.org/x/tools/go/analysis"
	"golang.org/x/tools/go/analysis/checker"
	"golang.org/x/tools/go/packages"

	"github.com/phalanx-net/phalanx/determinism/detcheck"
)

var update = flag.Bool("update", false, "rewrite the precision and recall table in docs/vet.md")

// measuredPackages are the corpus packages the precision and recall table
// is measured on: the rule packages, whose expectations are their // want
// comments, and limits, whose expectations are its "desync: RULE" labels.
var measuredPackages = append(slices.Clone(rulePackages), "limits")

// expectation is one finding the corpus says must be reported.
type expectation struct {
	file    string
	line    int
	pattern *regexp.Regexp // for a // want comment
	rule    string         // for a "desync: RULE" label, or the rule it matched
	matched bool
}

// ruleCounts are the counts of one rule.
type ruleCounts struct{ expected, reported, correct int }

// TestPrecisionRecall runs the analyzer over the corpus and checks that
// the table of precision and recall per rule in docs/vet.md is the one it
// measures. Run with -update to rewrite the table.
func TestPrecisionRecall(t *testing.T) {
	graph := analyze(t, detcheck.Analyzer, load(t, measuredPackages...))
	counts := make(map[string]*ruleCounts)
	for _, r := range detcheck.Rules() {
		counts[r] = new(ruleCounts)
	}
	for _, act := range graph.Roots {
		if act.Err != nil {
			t.Fatalf("%s: %v", act.Package.PkgPath, act.Err)
		}
		exps := expectations(act.Package.Fset, act.Package.Syntax)
		for _, d := range act.Diagnostics {
			pos := act.Package.Fset.Position(d.Pos)
			counts[d.Category].reported++
			for _, e := range exps {
				if e.matched || e.file != pos.Filename || e.line != pos.Line {
					continue
				}
				if e.pattern != nil && e.pattern.MatchString(d.Message) || e.rule == d.Category {
					e.matched = true
					e.rule = d.Category
					counts[d.Category].correct++
					break
				}
			}
		}
		for _, e := range exps {
			rule := e.rule
			if rule == "" {
				rule = ruleOfPattern(e.pattern)
			}
			if counts[rule] == nil {
				t.Errorf("%s:%d: cannot tell the rule of %q", e.file, e.line, e.pattern)
				continue
			}
			counts[rule].expected++
		}
	}
	table := formatTable(counts)
	t.Logf("\n%s", table)

	docPath := filepath.Join("..", "..", "docs", "vet.md")
	doc, err := os.ReadFile(docPath)
	if err != nil {
		t.Fatal(err)
	}
	const begin, end = "<!-- precision-recall: begin -->\n", "<!-- precision-recall: end -->"
	before, rest, ok1 := strings.Cut(string(doc), begin)
	_, after, ok2 := strings.Cut(rest, end)
	if !ok1 || !ok2 {
		t.Fatalf("%s has no %q ... %q section", docPath, begin, end)
	}
	if *update {
		if err := os.WriteFile(docPath, []byte(before+begin+table+end+after), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if got := rest[:strings.Index(rest, end)]; got != table {
		t.Errorf("the table in %s is not the one measured (run go test -run TestPrecisionRecall -update):\n%s", docPath, table)
	}
}

// load loads packages of testdata/src as analysistest does.
func load(t *testing.T, pkgs ...string) []*packages.Package {
	t.Helper()
	dir, err := filepath.Abs("testdata")
	if err != nil {
		t.Fatal(err)
	}
	cfg := &packages.Config{
		Mode: packages.LoadAllSyntax,
		Dir:  dir,
		Env:  append(os.Environ(), "GOPATH="+dir, "GO111MODULE=off", "GOPROXY=off", "GOWORK=off"),
	}
	loaded, err := packages.Load(cfg, pkgs...)
	if err != nil {
		t.Fatal(err)
	}
	return loaded
}

// analyze runs a on loaded packages.
func analyze(t *testing.T, a *analysis.Analyzer, loaded []*packages.Package) *checker.Graph {
	t.Helper()
	graph, err := checker.Analyze([]*analysis.Analyzer{a}, loaded, nil)
	if err != nil {
		t.Fatal(err)
	}
	return graph
}

// wantPattern and desyncLabel find the expectations in comments.
var (
	wantPattern = regexp.MustCompile("(\\w+:)?`([^`]*)`")
	desyncLabel = regexp.MustCompile(`desync: ([a-z]+)`)
	rulePattern = regexp.MustCompile(`\\\[(\w+)\\\]`)
)

// expectations reads the // want comments (not the fact ones) and the
// "desync: RULE" labels of files.
func expectations(fset *token.FileSet, files []*ast.File) []*expectation {
	var exps []*expectation
	for _, f := range files {
		for _, group := range f.Comments {
			for _, c := range group.List {
				pos := fset.Position(c.Pos())
				if _, want, ok := strings.Cut(c.Text, "// want "); ok || strings.HasPrefix(c.Text, "// want ") {
					if !ok {
						want = strings.TrimPrefix(c.Text, "// want ")
					}
					for _, m := range wantPattern.FindAllStringSubmatch(want, -1) {
						if m[1] != "" {
							continue // a fact
						}
						exps = append(exps, &expectation{file: pos.Filename, line: pos.Line, pattern: regexp.MustCompile(m[2])})
					}
				}
				if m := desyncLabel.FindStringSubmatch(c.Text); m != nil {
					exps = append(exps, &expectation{file: pos.Filename, line: pos.Line, rule: m[1]})
				}
			}
		}
	}
	return exps
}

// ruleOfPattern returns the rule a want pattern names in brackets, or
// guesses it from the message.
func ruleOfPattern(p *regexp.Regexp) string {
	if ms := rulePattern.FindAllStringSubmatch(p.String(), -1); ms != nil {
		return ms[len(ms)-1][1] // the last: "units\\[i\\]" may come before
	}
	s := p.String()
	for _, g := range []struct{ prefix, rule string }{
		{"float computation", detcheck.RuleFloat}, {"range over map", detcheck.RuleMapRange},
		{"go statement", detcheck.RuleGoroutine}, {"make\\(chan\\)", detcheck.RuleChan},
		{"channel ", detcheck.RuleChan}, {"range over channel", detcheck.RuleChan},
		{"time.", detcheck.RuleClock}, {"%p", detcheck.RulePointer},
		{"misspelled directive", detcheck.RuleDirective},
	} {
		if strings.HasPrefix(s, g.prefix) || strings.Contains(s, g.prefix) {
			return g.rule
		}
	}
	return ""
}

// formatTable formats the counts as a Markdown table.
func formatTable(counts map[string]*ruleCounts) string {
	var b strings.Builder
	b.WriteString("| rule | expected | reported | correct | precision | recall |\n")
	b.WriteString("|---|---:|---:|---:|---:|---:|\n")
	var total ruleCounts
	for _, r := range detcheck.Rules() {
		c := counts[r]
		total.expected += c.expected
		total.reported += c.reported
		total.correct += c.correct
		fmt.Fprintf(&b, "| %s | %d | %d | %d | %s | %s |\n", r, c.expected, c.reported, c.correct,
			ratio(c.correct, c.reported), ratio(c.correct, c.expected))
	}
	fmt.Fprintf(&b, "| all | %d | %d | %d | %s | %s |\n", total.expected, total.reported, total.correct,
		ratio(total.correct, total.reported), ratio(total.correct, total.expected))
	return b.String()
}

func ratio(n, d int) string {
	if d == 0 {
		return "–"
	}
	return fmt.Sprintf("%.2f", float64(n)/float64(d))
}
