package detcheck

import (
	"errors"
	"fmt"
	"go/ast"
	"go/build"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"

	"golang.org/x/tools/go/analysis"
)

// Rule names, as used in messages, in --enable and --disable, and in
// //phalanx:allow comments.
const (
	RuleMapRange  = "maprange"
	RuleFloat     = "float"
	RuleSort      = "sort"
	RuleClock     = "clock"
	RuleRand      = "rand"
	RuleMaphash   = "maphash"
	RulePointer   = "pointer"
	RuleEnv       = "env"
	RuleGoroutine = "goroutine"
	RuleSelect    = "select"
	RuleChan      = "chan"
	RuleUnsafe    = "unsafe"
	// RuleDirective reports misspelled, misplaced and malformed
	// //phalanx: directives. It cannot be allowed, only disabled.
	RuleDirective = "directive"
)

// Rules returns the names of all rules in documentation order.
func Rules() []string {
	return []string{
		RuleMapRange, RuleFloat, RuleSort, RuleClock, RuleRand, RuleMaphash,
		RulePointer, RuleEnv, RuleGoroutine, RuleSelect, RuleChan, RuleUnsafe,
		RuleDirective,
	}
}

// ErrUnknownRule is returned by [New] for a rule name that is not one of
// [Rules].
var ErrUnknownRule = errors.New("detcheck: unknown rule")

// Config selects the rules an analyzer reports.
type Config struct {
	// Enable, if not empty, lists the only rules reported.
	Enable []string
	// Disable lists rules not reported. It applies after Enable.
	Disable []string
}

// Result is what the analyzer returns for one package.
type Result struct {
	// Marked reports whether the package is marked //phalanx:deterministic
	// and was therefore checked.
	Marked bool
}

// Analyzer reports every rule. It is New(Config{}).
var Analyzer = mustNew(Config{})

func mustNew(cfg Config) *analysis.Analyzer {
	a, err := New(cfg)
	if err != nil {
		panic(err)
	}
	return a
}

// New returns an analyzer that reports the rules cfg selects in packages
// marked //phalanx:deterministic, and computes facts about the functions
// of every other package it runs on (except the standard library, whose
// relevant functions it knows by name). A disabled rule is neither
// reported nor followed through calls. New returns an error wrapping
// [ErrUnknownRule] if cfg names an unknown rule. The analyzer keeps no
// state between runs and is safe for concurrent use.
func New(cfg Config) (*analysis.Analyzer, error) {
	enabled := make(map[string]bool)
	for _, r := range Rules() {
		enabled[r] = len(cfg.Enable) == 0
	}
	for _, r := range cfg.Enable {
		if !slices.Contains(Rules(), r) {
			return nil, fmt.Errorf("%w %q; rules are %s", ErrUnknownRule, r, strings.Join(Rules(), ", "))
		}
		enabled[r] = true
	}
	for _, r := range cfg.Disable {
		if !slices.Contains(Rules(), r) {
			return nil, fmt.Errorf("%w %q; rules are %s", ErrUnknownRule, r, strings.Join(Rules(), ", "))
		}
		enabled[r] = false
	}
	return &analysis.Analyzer{
		Name: "detcheck",
		Doc: "report non-deterministic code in packages marked //phalanx:deterministic\n\n" +
			"Flags order-dependent map iteration, floating-point computation that reaches the " +
			"simulation state, unstable sorts that can tie, the clock, randomness, per-process " +
			"hashing, pointer values, the runtime environment, goroutines, select, channels and " +
			"unsafe, also through calls into other packages. Allow a finding with " +
			"\"//phalanx:allow RULE reason\" on its line, function, file or package.",
		URL:        "https://pkg.go.dev/github.com/phalanx-net/phalanx/determinism/detcheck",
		Run:        func(pass *analysis.Pass) (any, error) { return run(pass, enabled) },
		FactTypes:  []analysis.Fact{new(Fact)},
		ResultType: reflect.TypeFor[*Result](),
		// The standard library may be loaded without function bodies, which
		// leaves type errors; the analyzer skips it, and drivers refuse
		// other packages with errors before analysis.
		RunDespiteErrors: true,
	}, nil
}

func run(pass *analysis.Pass, enabled map[string]bool) (any, error) {
	if isStandard(pass) {
		return &Result{}, nil
	}
	dirs := parseDirectives(pass)
	rep := newReporter(pass, enabled, dirs.allows)
	for _, p := range dirs.problems {
		rep.add(finding{pos: p.pos, rule: RuleDirective, msg: p.msg})
	}
	if !dirs.marked {
		exportFacts(pass, enabled, dirs.allows)
		rep.flush()
		return &Result{}, nil
	}
	checkPackage(pass, rep)
	for _, p := range dirs.allows.unused(enabled) {
		rep.add(finding{pos: p.pos, rule: RuleDirective, msg: p.msg})
	}
	rep.flush()
	return &Result{Marked: true}, nil
}

// isStandard reports whether the package is part of the standard library,
// which is not analysed: its relevant functions are known by name. A
// package of a module is not; one without a module is if its files lie in
// GOROOT/src/PATH, GOROOT being recognised by its src/runtime (so that a
// toolchain other than the one vet was built with is recognised too).
func isStandard(pass *analysis.Pass) bool {
	if pass.Module != nil && pass.Module.Path != "" {
		return false
	}
	if len(pass.Files) == 0 {
		return true
	}
	tf := pass.Fset.File(pass.Files[0].FileStart)
	if tf == nil {
		return true
	}
	dir := filepath.Dir(tf.Name())
	suffix := string(filepath.Separator) + filepath.Join("src", filepath.FromSlash(pass.Pkg.Path()))
	root, ok := strings.CutSuffix(dir, suffix)
	if !ok {
		return false
	}
	if root == filepath.Clean(build.Default.GOROOT) {
		return true
	}
	_, err := os.Stat(filepath.Join(root, "src", "runtime", "runtime.go"))
	return err == nil
}

// isTestFile reports whether f is a _test.go file; those are not checked.
func isTestFile(pass *analysis.Pass, f *ast.File) bool {
	tf := pass.Fset.File(f.FileStart)
	return tf != nil && strings.HasSuffix(tf.Name(), "_test.go")
}
