package detcheck

import (
	"fmt"
	"go/ast"
	"go/token"
	"go/types"
	"slices"
	"strings"

	"golang.org/x/tools/go/analysis"
)

// Analyzer reports non-deterministic code in packages marked with the
// //phalanx:deterministic directive. See the package documentation for the
// rules and for suppressing a finding with //phalanx:allow.
var Analyzer = &analysis.Analyzer{
	Name: "detcheck",
	Doc: "report non-deterministic code in packages marked //phalanx:deterministic\n\n" +
		"Flags map ranges, floating-point values, the wall clock, math/rand, crypto/rand, " +
		"hash/maphash, goroutines, select, channel operations, environment and file reads, " +
		"syscall and unsafe. Suppress one finding with \"//phalanx:allow RULE reason\" on its " +
		"line or the line before.",
	URL: "https://pkg.go.dev/github.com/phalanx-net/phalanx/determinism/detcheck",
	Run: run,
}

// The directives, without their leading "//".
const (
	deterministicDirective = "phalanx:deterministic"
	allowDirective         = "phalanx:allow"
)

// Rule names, as used in messages and in //phalanx:allow comments.
const (
	ruleMapRange  = "maprange"
	ruleFloat     = "float"
	ruleClock     = "clock"
	ruleRand      = "rand"
	ruleMaphash   = "maphash"
	ruleGoroutine = "goroutine"
	ruleSelect    = "select"
	ruleChan      = "chan"
	ruleEnv       = "env"
	ruleUnsafe    = "unsafe"

	// ruleAllow reports malformed //phalanx:allow comments; it cannot be
	// suppressed.
	ruleAllow = "allow"
)

// rules lists the rule names that //phalanx:allow accepts, in documentation
// order.
var rules = []string{
	ruleMapRange, ruleFloat, ruleClock, ruleRand, ruleMaphash,
	ruleGoroutine, ruleSelect, ruleChan, ruleEnv, ruleUnsafe,
}

// clockFuncs are the functions of package time that read or wait on the clock.
var clockFuncs = map[string]bool{
	"Now": true, "Since": true, "Until": true, "Sleep": true, "After": true,
	"Tick": true, "NewTimer": true, "NewTicker": true, "AfterFunc": true,
}

// randPackages are the packages of random numbers not derived from a session
// seed.
var randPackages = map[string]bool{
	"math/rand": true, "math/rand/v2": true, "crypto/rand": true,
}

// osReads are the package-level functions and variables of package os that
// read the environment, the process identity or the file system.
var osReads = map[string]bool{
	"Getenv": true, "LookupEnv": true, "Environ": true, "ExpandEnv": true,
	"ReadFile": true, "Open": true, "OpenFile": true, "OpenInRoot": true, "OpenRoot": true,
	"ReadDir": true, "Stat": true, "Lstat": true, "Readlink": true, "DirFS": true,
	"Hostname": true, "Getpid": true, "Getppid": true, "Getuid": true, "Geteuid": true,
	"Getgid": true, "Getegid": true, "Getgroups": true, "Getpagesize": true,
	"Getwd": true, "Executable": true, "TempDir": true,
	"UserHomeDir": true, "UserCacheDir": true, "UserConfigDir": true,
	"Args": true, "Stdin": true,
}

// ioutilReads are the reading functions of package io/ioutil.
var ioutilReads = map[string]bool{"ReadFile": true, "ReadDir": true, "ReadAll": true}

// mapIterators are the functions of package maps that iterate a map in its
// random order.
var mapIterators = map[string]bool{"Keys": true, "Values": true, "All": true}

func run(pass *analysis.Pass) (any, error) {
	if !marked(pass) {
		return nil, nil
	}
	c := &checker{
		pass:            pass,
		allowed:         make(map[lineKey][]string),
		sortedIterators: make(map[ast.Node]bool),
	}
	for _, f := range pass.Files {
		if isTestFile(pass, f) {
			continue
		}
		c.collectAllows(f)
	}
	for _, f := range pass.Files {
		if isTestFile(pass, f) {
			continue
		}
		c.checkFile(f)
	}
	return nil, nil
}

// marked reports whether any non-test file of the package carries the
// //phalanx:deterministic directive in a comment before its package clause.
func marked(pass *analysis.Pass) bool {
	for _, f := range pass.Files {
		if isTestFile(pass, f) {
			continue
		}
		for _, group := range f.Comments {
			if group.Pos() >= f.Package {
				break
			}
			for _, comment := range group.List {
				if _, ok := directive(comment.Text, deterministicDirective); ok {
					return true
				}
			}
		}
	}
	return false
}

// directive reports whether the comment text is the line comment
// "//name", alone or followed by white space and arguments, which it
// returns trimmed.
func directive(text, name string) (args string, ok bool) {
	rest, ok := strings.CutPrefix(text, "//"+name)
	if !ok {
		return "", false
	}
	if rest != "" && rest[0] != ' ' && rest[0] != '\t' {
		return "", false // a longer word, such as //phalanx:allowed
	}
	return strings.TrimSpace(rest), true
}

func isTestFile(pass *analysis.Pass, f *ast.File) bool {
	tf := pass.Fset.File(f.FileStart)
	return tf != nil && strings.HasSuffix(tf.Name(), "_test.go")
}

// lineKey names one line of one file.
type lineKey struct {
	file *token.File
	line int
}

// checker holds the state of one run over one marked package.
type checker struct {
	pass *analysis.Pass

	// allowed maps a line to the rules suppressed on it.
	allowed map[lineKey][]string

	// sortedIterators holds the references to maps.Keys and maps.Values
	// whose sequence goes straight into a sorting function of package
	// slices, and is therefore deterministic.
	sortedIterators map[ast.Node]bool

	// floatRoot is the outermost node reported (or suppressed) by the float
	// rule that the walk is inside, or nil; float findings within it are
	// not reported again.
	floatRoot ast.Node
}

// collectAllows records the //phalanx:allow comments of f and reports the
// malformed ones.
func (c *checker) collectAllows(f *ast.File) {
	for _, group := range f.Comments {
		for _, comment := range group.List {
			args, ok := directive(comment.Text, allowDirective)
			if !ok {
				continue
			}
			if i := strings.Index(args, "//"); i >= 0 {
				args = strings.TrimSpace(args[:i]) // a trailing comment is not the reason
			}
			ruleList, reason, _ := strings.Cut(args, " ")
			if ruleList == "" || strings.TrimSpace(reason) == "" {
				c.reportAt(comment.Pos(), ruleAllow,
					"malformed //phalanx:allow: want \"//phalanx:allow RULE reason\" with a non-empty reason")
				continue
			}
			names := strings.Split(ruleList, ",")
			valid := true
			for _, name := range names {
				if !slices.Contains(rules, name) {
					c.reportAt(comment.Pos(), ruleAllow,
						fmt.Sprintf("//phalanx:allow names unknown rule %q; rules are %s", name, strings.Join(rules, ", ")))
					valid = false
				}
			}
			if !valid {
				continue
			}
			tf := c.pass.Fset.File(comment.Pos())
			line := tf.Line(comment.Pos())
			for _, l := range []int{line, line + 1} {
				key := lineKey{tf, l}
				c.allowed[key] = append(c.allowed[key], names...)
			}
		}
	}
}

// report reports a finding of rule at pos unless an allow comment suppresses
// it.
func (c *checker) report(pos token.Pos, rule, format string, args ...any) {
	tf := c.pass.Fset.File(pos)
	if tf != nil && slices.Contains(c.allowed[lineKey{tf, tf.Line(pos)}], rule) {
		return
	}
	c.reportAt(pos, rule, fmt.Sprintf(format, args...))
}

func (c *checker) reportAt(pos token.Pos, rule, msg string) {
	c.pass.Report(analysis.Diagnostic{
		Pos:      pos,
		Category: rule,
		Message:  "detcheck: " + msg + " [" + rule + "]",
	})
}

func (c *checker) checkFile(f *ast.File) {
	for _, spec := range f.Imports {
		c.checkImport(spec)
	}
	var stack []ast.Node
	ast.Inspect(f, func(n ast.Node) bool {
		if n == nil {
			top := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			if top == c.floatRoot {
				c.floatRoot = nil
			}
			return true
		}
		var parent ast.Node
		if len(stack) > 0 {
			parent = stack[len(stack)-1]
		}
		stack = append(stack, n)
		c.checkNode(n, parent)
		return true
	})
}

func (c *checker) checkImport(spec *ast.ImportSpec) {
	path := strings.Trim(spec.Path.Value, "\"`")
	switch {
	case randPackages[path]:
		c.report(spec.Pos(), ruleRand, "import of %s: random numbers not derived from the session seed; use package rng", path)
	case path == "hash/maphash":
		c.report(spec.Pos(), ruleMaphash, "import of hash/maphash: its seed is random per process; use the determinism state hasher")
	case path == "syscall":
		c.report(spec.Pos(), ruleEnv, "import of syscall: system calls read state that differs between peers")
	case path == "unsafe":
		c.report(spec.Pos(), ruleUnsafe, "import of unsafe: memory layout and pointer values are not portable between peers")
	}
}

func (c *checker) checkNode(n, parent ast.Node) {
	c.checkFloat(n)
	info := c.pass.TypesInfo
	switch n := n.(type) {
	case *ast.RangeStmt:
		switch {
		case allTerms(info.TypeOf(n.X), isMap):
			c.report(n.Pos(), ruleMapRange, "range over map: iteration order is random; use determinism.SortedKeys")
		case allTerms(info.TypeOf(n.X), isChan):
			c.report(n.Pos(), ruleChan, "range over channel: delivery depends on goroutine scheduling")
		}
	case *ast.GoStmt:
		c.report(n.Pos(), ruleGoroutine, "go statement: goroutine scheduling is not deterministic")
	case *ast.SelectStmt:
		c.report(n.Pos(), ruleSelect, "select statement: the ready case is chosen at random")
	case *ast.SendStmt:
		c.report(n.Pos(), ruleChan, "channel send: delivery depends on goroutine scheduling")
	case *ast.UnaryExpr:
		if n.Op == token.ARROW {
			c.report(n.Pos(), ruleChan, "channel receive: delivery depends on goroutine scheduling")
		}
	case *ast.CallExpr:
		c.checkBuiltinCall(n)
		c.noteSortedIterator(n)
	case *ast.SelectorExpr:
		if !c.sortedIterators[n] {
			c.checkReference(n.Sel, n.Pos())
		}
	case *ast.Ident:
		if sel, ok := parent.(*ast.SelectorExpr); ok && sel.Sel == n {
			return // checked with its selector
		}
		if !c.sortedIterators[n] {
			c.checkReference(n, n.Pos())
		}
	}
}

// noteSortedIterator records the maps.Keys or maps.Values in
// slices.Sorted(maps.Keys(m)) and its kin, which are deterministic.
func (c *checker) noteSortedIterator(call *ast.CallExpr) {
	if !isPackageFunc(c.calleeOf(call), "slices", "Sorted", "SortedFunc", "SortedStableFunc") || len(call.Args) == 0 {
		return
	}
	inner, ok := ast.Unparen(call.Args[0]).(*ast.CallExpr)
	if !ok || !isPackageFunc(c.calleeOf(inner), "maps", "Keys", "Values") {
		return
	}
	c.sortedIterators[ast.Unparen(inner.Fun)] = true
}

// calleeOf returns the object a call's function expression names, or nil.
// A generic function is named with or without its instantiation.
func (c *checker) calleeOf(call *ast.CallExpr) types.Object {
	fun := ast.Unparen(call.Fun)
	switch index := fun.(type) {
	case *ast.IndexExpr:
		fun = index.X
	case *ast.IndexListExpr:
		fun = index.X
	}
	switch fun := fun.(type) {
	case *ast.Ident:
		return c.pass.TypesInfo.Uses[fun]
	case *ast.SelectorExpr:
		return c.pass.TypesInfo.Uses[fun.Sel]
	}
	return nil
}

// isPackageFunc reports whether obj is one of the named package-level
// functions of the package with the given path.
func isPackageFunc(obj types.Object, path string, names ...string) bool {
	fn, ok := obj.(*types.Func)
	return ok && fn.Pkg() != nil && fn.Pkg().Path() == path &&
		fn.Signature().Recv() == nil && slices.Contains(names, fn.Name())
}

// checkBuiltinCall reports close and make of a channel.
func (c *checker) checkBuiltinCall(call *ast.CallExpr) {
	id, ok := ast.Unparen(call.Fun).(*ast.Ident)
	if !ok {
		return
	}
	builtin, ok := c.pass.TypesInfo.Uses[id].(*types.Builtin)
	if !ok {
		return
	}
	switch builtin.Name() {
	case "close":
		c.report(call.Pos(), ruleChan, "close of channel: channels synchronise goroutines, whose scheduling is not deterministic")
	case "make":
		if len(call.Args) > 0 && allTerms(c.pass.TypesInfo.TypeOf(call.Args[0]), isChan) {
			c.report(call.Pos(), ruleChan, "make(chan): channels synchronise goroutines, whose scheduling is not deterministic")
		}
	}
}

// checkReference reports a use of a forbidden package-level function or
// variable. pos is where the reference starts, qualifier included.
func (c *checker) checkReference(id *ast.Ident, pos token.Pos) {
	obj := c.pass.TypesInfo.Uses[id]
	if obj == nil || obj.Pkg() == nil {
		return
	}
	path := obj.Pkg().Path()
	fn, isFunc := obj.(*types.Func)
	_, isVar := obj.(*types.Var)
	packageLevel := obj.Pkg().Scope().Lookup(obj.Name()) == obj
	switch {
	case path == "time" && isFunc && packageLevel && clockFuncs[obj.Name()]:
		c.report(pos, ruleClock, "time.%s reads the real clock; time must enter the simulation as frames", obj.Name())
	case randPackages[path] && (isFunc || isVar && packageLevel):
		c.report(pos, ruleRand, "%s (%s): random numbers not derived from the session seed; use package rng", objectName(obj), path)
	case path == "hash/maphash" && (isFunc || isVar && packageLevel):
		c.report(pos, ruleMaphash, "%s: hash/maphash is seeded at random per process; use the determinism state hasher", objectName(obj))
	case path == "syscall" && (isFunc || isVar && packageLevel):
		c.report(pos, ruleEnv, "%s: system calls read state that differs between peers", objectName(obj))
	case path == "os" && (isFunc || isVar) && packageLevel && osReads[obj.Name()]:
		c.report(pos, ruleEnv, "os.%s reads the environment or file system, which differs between peers", obj.Name())
	case path == "io/ioutil" && isFunc && packageLevel && ioutilReads[obj.Name()]:
		c.report(pos, ruleEnv, "ioutil.%s reads outside the simulation, which differs between peers", obj.Name())
	case path == "maps" && isFunc && packageLevel && mapIterators[obj.Name()]:
		c.report(pos, ruleMapRange, "maps.%s iterates a map in random order; use determinism.SortedKeys", obj.Name())
	case path == "math" && isFunc && packageLevel && c.floatRoot == nil && hasFloatInSignature(fn):
		c.report(pos, ruleFloat, "math.%s is floating-point; use determinism fixed-point", obj.Name())
	}
}

// objectName names a function, method or variable with its package name, as
// in "rand.Intn" or "(*rand.Rand).Intn".
func objectName(obj types.Object) string {
	qualifier := func(p *types.Package) string { return p.Name() }
	if fn, ok := obj.(*types.Func); ok {
		if recv := fn.Signature().Recv(); recv != nil {
			recvType := types.TypeString(recv.Type(), qualifier)
			if strings.HasPrefix(recvType, "*") {
				recvType = "(" + recvType + ")"
			}
			return recvType + "." + fn.Name()
		}
	}
	return obj.Pkg().Name() + "." + obj.Name()
}

// checkFloat reports n if it is a floating-point operation, conversion,
// constant or call, unless it lies within an outer float finding.
func (c *checker) checkFloat(n ast.Node) {
	if c.floatRoot != nil {
		return
	}
	msg := c.floatMessage(n)
	if msg == "" {
		return
	}
	c.floatRoot = n
	c.report(n.Pos(), ruleFloat, "%s; use determinism fixed-point", msg)
}

// floatMessage describes n if it is a float finding, or returns "".
func (c *checker) floatMessage(n ast.Node) string {
	info := c.pass.TypesInfo
	switch n := n.(type) {
	case *ast.AssignStmt:
		if n.Tok != token.ASSIGN && n.Tok != token.DEFINE && len(n.Lhs) == 1 && isFloat(info.TypeOf(n.Lhs[0])) {
			return fmt.Sprintf("float arithmetic (%s)", n.Tok)
		}
		return ""
	case *ast.IncDecStmt:
		if isFloat(info.TypeOf(n.X)) {
			return fmt.Sprintf("float arithmetic (%s)", n.Tok)
		}
		return ""
	case *ast.CallExpr:
		if msg := c.floatCallMessage(n); msg != "" {
			return msg
		}
	case *ast.BinaryExpr:
		if info.Types[n].Value == nil && (isTypedFloat(info.TypeOf(n.X)) || isTypedFloat(info.TypeOf(n.Y))) {
			switch n.Op {
			case token.EQL, token.NEQ, token.LSS, token.LEQ, token.GTR, token.GEQ:
				return fmt.Sprintf("float comparison (%s)", n.Op)
			}
			return fmt.Sprintf("float arithmetic (%s)", n.Op)
		}
	case *ast.UnaryExpr:
		if (n.Op == token.SUB || n.Op == token.ADD) && info.Types[n].Value == nil && isFloat(info.TypeOf(n)) {
			return fmt.Sprintf("float arithmetic (unary %s)", n.Op)
		}
	}
	if e, ok := n.(ast.Expr); ok {
		if tv, ok := info.Types[e]; ok && tv.Value != nil && !tv.IsType() && isTypedFloat(tv.Type) {
			return fmt.Sprintf("float constant %s of type %s", tv.Value, tv.Type)
		}
	}
	return ""
}

// floatCallMessage describes a call that converts to or from a float, calls a
// floating-point function of package math or returns a float, or returns "".
func (c *checker) floatCallMessage(call *ast.CallExpr) string {
	info := c.pass.TypesInfo
	if tv := info.Types[call.Fun]; tv.IsType() {
		if len(call.Args) != 1 {
			return ""
		}
		from := info.TypeOf(call.Args[0])
		switch {
		case isFloat(tv.Type):
			return fmt.Sprintf("conversion to %s", tv.Type)
		case isTypedFloat(from):
			return fmt.Sprintf("conversion from %s to %s", from, tv.Type)
		}
		return ""
	}
	if fn, ok := c.calleeOf(call).(*types.Func); ok && fn.Pkg() != nil && fn.Pkg().Path() == "math" &&
		fn.Signature().Recv() == nil && hasFloatInSignature(fn) {
		return fmt.Sprintf("math.%s is floating-point", fn.Name())
	}
	if t := info.TypeOf(call); isTypedFloat(t) {
		return fmt.Sprintf("call returning %s", t)
	}
	return ""
}

func hasFloatInSignature(fn *types.Func) bool {
	sig := fn.Signature()
	for _, tuple := range []*types.Tuple{sig.Params(), sig.Results()} {
		for v := range tuple.Variables() {
			if isFloat(v.Type()) {
				return true
			}
		}
	}
	return false
}

// isFloat reports whether t is a floating-point or complex type, typed or
// untyped, or a type parameter whose type set holds one.
func isFloat(t types.Type) bool {
	if t == nil {
		return false
	}
	if _, ok := types.Unalias(t).(*types.TypeParam); ok {
		return slices.ContainsFunc(typeTerms(t, 0), isFloatBasic)
	}
	return isFloatBasic(t.Underlying())
}

// isTypedFloat is isFloat without the untyped constant kinds.
func isTypedFloat(t types.Type) bool {
	if t == nil {
		return false
	}
	if b, ok := t.Underlying().(*types.Basic); ok && b.Info()&types.IsUntyped != 0 {
		return false
	}
	return isFloat(t)
}

func isFloatBasic(t types.Type) bool {
	b, ok := t.(*types.Basic)
	return ok && b.Info()&(types.IsFloat|types.IsComplex) != 0
}

func isMap(t types.Type) bool {
	_, ok := t.(*types.Map)
	return ok
}

func isChan(t types.Type) bool {
	_, ok := t.(*types.Chan)
	return ok
}

// allTerms reports whether the underlying type of t satisfies pred or, for a
// type parameter, whether every type in its type set does (so that its core
// type, if any, does).
func allTerms(t types.Type, pred func(types.Type) bool) bool {
	if t == nil {
		return false
	}
	if _, ok := types.Unalias(t).(*types.TypeParam); !ok {
		return pred(t.Underlying())
	}
	terms := typeTerms(t, 0)
	return len(terms) > 0 && !slices.ContainsFunc(terms, func(u types.Type) bool { return !pred(u) })
}

// typeTerms returns the underlying types named by the type set of a type
// parameter or constraint interface t, or t's underlying type if t is neither.
// Embedded interfaces are merged as if unioned: an over-approximation that is
// exact for the usual constraints (a union of ~T terms).
func typeTerms(t types.Type, depth int) []types.Type {
	iface, ok := t.Underlying().(*types.Interface)
	if !ok {
		return []types.Type{t.Underlying()}
	}
	if depth > 32 {
		return nil
	}
	var terms []types.Type
	for i := range iface.NumEmbeddeds() {
		switch embedded := iface.EmbeddedType(i).(type) {
		case *types.Union:
			for j := range embedded.Len() {
				terms = append(terms, typeTerms(embedded.Term(j).Type(), depth+1)...)
			}
		default:
			terms = append(terms, typeTerms(embedded, depth+1)...)
		}
	}
	return terms
}
