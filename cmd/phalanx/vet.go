package main

import (
	"cmp"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/tools/go/analysis"
	"golang.org/x/tools/go/analysis/checker"
	"golang.org/x/tools/go/packages"

	"github.com/phalanx-net/phalanx/determinism/detcheck"
)

const vetUsage = `usage: phalanx vet [-C dir] [pattern ...]

Vet reports non-deterministic code in the packages that match the patterns
(default ./...) and are marked //phalanx:deterministic. It prints one line per
finding, "file:line:col: message", sorted by position, and exits 1 if there
are findings, 0 if there are none and 2 on a usage, load or type error.
Suppress one finding with "//phalanx:allow RULE reason" on its line or the line
before. The rules are described in the documentation of package
github.com/phalanx-net/phalanx/determinism/detcheck.

flags:
`

// runVet implements "phalanx vet". It returns the process exit code.
func runVet(args []string, stdout, stderr io.Writer) int {
	flags := flag.NewFlagSet("vet", flag.ContinueOnError)
	flags.SetOutput(stderr)
	dir := flags.String("C", "", "change to `dir` before loading packages; positions are printed relative to it")
	flags.Usage = func() {
		fmt.Fprint(stderr, vetUsage)
		flags.PrintDefaults()
	}
	if err := flags.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	patterns := flags.Args()
	if len(patterns) == 0 {
		patterns = []string{"./..."}
	}

	findings, loadErrs, err := vet(*dir, patterns)
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
	for _, f := range findings {
		fmt.Fprintln(stdout, f)
	}
	if len(findings) > 0 {
		return 1
	}
	return 0
}

// vetFinding is one diagnostic of the analyzer.
type vetFinding struct {
	file      string // relative to the working directory when possible
	line, col int
	message   string
}

func (f vetFinding) String() string {
	return fmt.Sprintf("%s:%d:%d: %s", f.file, f.line, f.col, f.message)
}

// vet loads the packages matching patterns from dir (the current directory if
// empty) and runs detcheck on them. It returns the findings sorted by
// position, or the load and type errors of the packages and their
// dependencies, or an error if loading or analysis failed as a whole.
func vet(dir string, patterns []string) (findings []vetFinding, loadErrs []string, err error) {
	base := dir
	if base == "" {
		if base, err = os.Getwd(); err != nil {
			return nil, nil, err
		}
	}
	if base, err = filepath.Abs(base); err != nil {
		return nil, nil, err
	}

	cfg := &packages.Config{
		Mode: packages.LoadSyntax | packages.NeedModule,
		Dir:  base,
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

	graph, err := checker.Analyze([]*analysis.Analyzer{detcheck.Analyzer}, pkgs, nil)
	if err != nil {
		return nil, nil, err
	}
	for _, act := range graph.Roots {
		if act.Err != nil {
			return nil, nil, fmt.Errorf("%s: %w", act.Package.PkgPath, act.Err)
		}
		for _, d := range act.Diagnostics {
			pos := act.Package.Fset.Position(d.Pos)
			findings = append(findings, vetFinding{
				file:    relativePath(base, pos.Filename),
				line:    pos.Line,
				col:     pos.Column,
				message: d.Message,
			})
		}
	}
	slices.SortFunc(findings, func(a, b vetFinding) int {
		return cmp.Or(
			cmp.Compare(a.file, b.file),
			cmp.Compare(a.line, b.line),
			cmp.Compare(a.col, b.col),
			cmp.Compare(a.message, b.message),
		)
	})
	return slices.Compact(findings), nil, nil
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
