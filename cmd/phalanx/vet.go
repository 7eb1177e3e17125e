package main

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"go/ast"
	"go/build"
	"go/parser"
	"go/token"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/tools/go/analysis"
	"golang.org/x/tools/go/analysis/checker"
	"golang.org/x/tools/go/packages"

	"github.com/phalanx-net/phalanx/determinism/detcheck"
)

const vetUsage = `usage: phalanx vet [-C dir] [--enable RULE,...] [--disable RULE,...] [--json] [pattern ...]

Vet reports non-deterministic code in the packages that match the patterns
(default ./...) and are marked //phalanx:deterministic, following their calls
into other packages of the module and its dependencies. It prints one line
per finding, "file:line:col: message", sorted by position, then a summary
line; with --json, one JSON object per finding and a JSON summary as the last
line. It exits 1 if there are findings, 0 if there are none, and 2 on a usage,
load or type error or when none of the packages is marked. Allow a finding
with "//phalanx:allow RULE reason" on its line, function, file or package.
The rules are described in docs/vet.md and in the documentation of package
github.com/phalanx-net/phalanx/determinism/detcheck.

flags:
`

// runVet implements "phalanx vet". It returns the process exit code.
func runVet(args []string, stdout, stderr io.Writer) int {
	flags := flag.NewFlagSet("vet", flag.ContinueOnError)
	flags.SetOutput(stderr)
	dir := flags.String("C", "", "change to `dir` before loading packages; positions are printed relative to it")
	enable := flags.String("enable", "", "report only these `rules` (comma-separated)")
	disable := flags.String("disable", "", "do not report these `rules` (comma-separated)")
	jsonOut := flags.Bool("json", false, "print one JSON object per finding and a JSON summary")
	flags.Usage = func() {
		fmt.Fprint(stderr, vetUsage)
		flags.PrintDefaults()
		fmt.Fprintf(stderr, "\nrules: %s\n", strings.Join(detcheck.Rules(), ", "))
	}
	if err := flags.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	analyzer, err := detcheck.New(detcheck.Config{Enable: splitList(*enable), Disable: splitList(*disable)})
	if err != nil {
		fmt.Fprintf(stderr, "phalanx vet: %v\n", err)
		return 2
	}
	patterns := flags.Args()
	if len(patterns) == 0 {
		patterns = []string{"./..."}
	}

	report, loadErrs, err := vet(*dir, patterns, analyzer)
	if err != nil {
		fmt.Fprintf(stderr, "phalanx vet: %v\n", err)
		return 2
	}
	if len(loadErrs) > 0 {
		for _, msg := range loadErrs {
			fmt.Fprintln(stderr, msg)
		}
		return 2
	}
	enc := json.NewEncoder(stdout)
	for _, f := range report.Findings {
		if *jsonOut {
			enc.Encode(f)
		} else {
			fmt.Fprintln(stdout, f)
		}
	}
	if *jsonOut {
		enc.Encode(report.summary())
	} else {
		fmt.Fprintln(stdout, report.summaryLine())
	}
	switch {
	case report.Marked == 0:
		fmt.Fprintf(stderr, "phalanx vet: no package matching %s is marked //phalanx:deterministic (%s matched); nothing was checked\n",
			strings.Join(patterns, " "), plural(report.Packages, "package"))
		return 2
	case len(report.Findings) > 0:
		return 1
	}
	return 0
}

func splitList(s string) []string {
	var out []string
	for part := range strings.SplitSeq(s, ",") {
		if part = strings.TrimSpace(part); part != "" {
			out = append(out, part)
		}
	}
	return out
}

// vetFinding is one diagnostic of the analyzer.
type vetFinding struct {
	File    string   `json:"file"` // relative to the working directory when possible
	Line    int      `json:"line"`
	Col     int      `json:"column"`
	Rule    string   `json:"rule"`
	Message string   `json:"message"`
	Path    []string `json:"call_path"` // empty unless found through calls
}

func (f vetFinding) String() string {
	return fmt.Sprintf("%s:%d:%d: %s", f.File, f.Line, f.Col, f.Message)
}

// vetReport is the outcome of one run.
type vetReport struct {
	Packages int // packages matched
	Marked   int // of which marked, and checked
	Findings []vetFinding
}

// vetSummary is the JSON form of the summary line.
type vetSummary struct {
	Packages int            `json:"packages"`
	Marked   int            `json:"marked"`
	Findings int            `json:"findings"`
	ByRule   map[string]int `json:"by_rule"`
}

func (r *vetReport) summary() vetSummary {
	s := vetSummary{Packages: r.Packages, Marked: r.Marked, Findings: len(r.Findings), ByRule: make(map[string]int)}
	for _, f := range r.Findings {
		s.ByRule[f.Rule]++
	}
	return s
}

// summaryLine says "vet: 2 packages, 1 marked; 3 findings (maprange 2, float 1)".
func (r *vetReport) summaryLine() string {
	s := r.summary()
	var counts []string
	for _, rule := range detcheck.Rules() {
		if n := s.ByRule[rule]; n > 0 {
			counts = append(counts, fmt.Sprintf("%s %d", rule, n))
		}
	}
	line := fmt.Sprintf("vet: %s, %d marked; %s", plural(s.Packages, "package"), s.Marked, plural(s.Findings, "finding"))
	if len(counts) > 0 {
		line += " (" + strings.Join(counts, ", ") + ")"
	}
	return line
}

// plural says "1 package" or "2 packages".
func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return fmt.Sprintf("%d %ss", n, word)
}

// vet loads the packages matching patterns from dir (the current directory if
// empty), with their dependencies, and runs analyzer on them. It returns the
// findings sorted by position, or the load and type errors of the packages
// and their dependencies, or an error if loading or analysis failed as a
// whole.
func vet(dir string, patterns []string, analyzer *analysis.Analyzer) (report *vetReport, loadErrs []string, err error) {
	base := dir
	if base == "" {
		if base, err = os.Getwd(); err != nil {
			return nil, nil, err
		}
	}
	if base, err = filepath.Abs(base); err != nil {
		return nil, nil, err
	}

	goroot := gorootOf(base)
	cfg := &packages.Config{
		Mode: packages.LoadAllSyntax | packages.NeedModule,
		Dir:  base,
		ParseFile: func(fset *token.FileSet, filename string, src []byte) (*ast.File, error) {
			return parseTrimmingStd(goroot, fset, filename, src)
		},
	}
	pkgs, err := packages.Load(cfg, patterns...)
	if err != nil {
		return nil, nil, err
	}
	if len(pkgs) == 0 {
		return nil, nil, fmt.Errorf("no packages match %s", strings.Join(patterns, " "))
	}
	seen := make(map[string]bool)
	packages.Visit(pkgs, nil, func(p *packages.Package) {
		if standard(goroot, p) {
			return // bodies dropped by parseTrimmingStd: unused imports, missing returns
		}
		for _, e := range p.Errors {
			// A compile error reported by the go command repeats the type
			// errors under a "# package" header: keep each line once.
			for line := range strings.SplitSeq(relativeError(base, e), "\n") {
				line = strings.TrimSpace(line)
				if line == "" || strings.HasPrefix(line, "# ") || seen[line] {
					continue
				}
				seen[line] = true
				loadErrs = append(loadErrs, line)
			}
		}
	})
	if len(loadErrs) > 0 {
		return nil, loadErrs, nil
	}

	graph, err := checker.Analyze([]*analysis.Analyzer{analyzer}, pkgs, nil)
	if err != nil {
		return nil, nil, err
	}
	report = &vetReport{Packages: len(graph.Roots)}
	for _, act := range graph.Roots {
		if act.Err != nil {
			return nil, nil, fmt.Errorf("%s: %w", act.Package.PkgPath, act.Err)
		}
		if res, ok := act.Result.(*detcheck.Result); ok && res.Marked {
			report.Marked++
		}
		for _, d := range act.Diagnostics {
			pos := act.Package.Fset.Position(d.Pos)
			report.Findings = append(report.Findings, vetFinding{
				File:    relativePath(base, pos.Filename),
				Line:    pos.Line,
				Col:     pos.Column,
				Rule:    d.Category,
				Message: d.Message,
				Path:    append([]string{}, detcheck.CallPath(d)...),
			})
		}
	}
	slices.SortFunc(report.Findings, func(a, b vetFinding) int {
		return cmp.Or(
			cmp.Compare(a.File, b.File),
			cmp.Compare(a.Line, b.Line),
			cmp.Compare(a.Col, b.Col),
			cmp.Compare(a.Message, b.Message),
		)
	})
	report.Findings = slices.CompactFunc(report.Findings, func(a, b vetFinding) bool {
		return a.File == b.File && a.Line == b.Line && a.Col == b.Col && a.Message == b.Message
	})
	return report, nil, nil
}

// gorootOf returns the standard library's source directory, with a
// trailing separator, as the go command run in dir sees it (it may switch
// toolchains), or as this program was built if that fails.
func gorootOf(dir string) string {
	root := build.Default.GOROOT
	cmd := exec.Command("go", "env", "GOROOT")
	cmd.Dir = dir
	if out, err := cmd.Output(); err == nil && len(bytes.TrimSpace(out)) > 0 {
		root = string(bytes.TrimSpace(out))
	}
	return filepath.Join(root, "src") + string(filepath.Separator)
}

// parseTrimmingStd parses a file for the loader. The standard library
// (under goroot) is not analysed (detcheck knows its relevant functions by
// name), so its function bodies are dropped: type-checking it then costs a
// fraction.
func parseTrimmingStd(goroot string, fset *token.FileSet, filename string, src []byte) (*ast.File, error) {
	if !strings.HasPrefix(filename, goroot) {
		return parser.ParseFile(fset, filename, src, parser.AllErrors|parser.ParseComments)
	}
	f, err := parser.ParseFile(fset, filename, src, parser.SkipObjectResolution)
	if f != nil {
		for _, decl := range f.Decls {
			if fd, ok := decl.(*ast.FuncDecl); ok {
				fd.Body = nil
			}
		}
	}
	return f, err
}

// standard reports whether p is a package of the standard library.
func standard(goroot string, p *packages.Package) bool {
	return len(p.CompiledGoFiles) > 0 && strings.HasPrefix(p.CompiledGoFiles[0], goroot)
}

// relativePath returns path relative to base if it lies within base, and
// path unchanged otherwise.
func relativePath(base, path string) string {
	rel, err := filepath.Rel(base, path)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return path
	}
	return rel
}

// relativeError formats a load or type error, its position relative to base.
func relativeError(base string, e packages.Error) string {
	if e.Pos == "" || e.Pos == "-" {
		return e.Msg
	}
	return relativePath(base, e.Pos) + ": " + e.Msg
}
