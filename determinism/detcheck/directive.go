package detcheck

import (
	"fmt"
	"go/ast"
	"go/token"
	"regexp"
	"slices"
	"strings"

	"golang.org/x/tools/go/analysis"
)

// The directives, without their leading "//".
const (
	deterministicDirective = "phalanx:deterministic"
	allowDirective         = "phalanx:allow"
)

// directives is what the //phalanx: comments of one package say.
type directives struct {
	marked   bool
	allows   *allows
	problems []problem
}

// problem is a misspelled, misplaced or malformed directive.
type problem struct {
	pos token.Pos
	msg string
}

// allows holds the //phalanx:allow comments of one package by scope.
type allows struct {
	fset *token.FileSet
	// pkg lists the rules allowed in the whole package.
	pkg []string
	// spans are the functions, declarations and files with allowed rules.
	spans []allowSpan
	// lines maps a line to the rules allowed on it.
	lines map[lineKey][]string
}

type allowSpan struct {
	from, to token.Pos
	rules    []string
}

// lineKey names one line of one file.
type lineKey struct {
	file *token.File
	line int
}

// allowed reports whether rule is allowed at pos.
func (a *allows) allowed(pos token.Pos, rule string) bool {
	if a == nil || rule == RuleDirective {
		return false
	}
	if slices.Contains(a.pkg, rule) {
		return true
	}
	for _, s := range a.spans {
		if s.from <= pos && pos < s.to && slices.Contains(s.rules, rule) {
			return true
		}
	}
	if tf := a.fset.File(pos); tf != nil {
		return slices.Contains(a.lines[lineKey{tf, tf.Line(pos)}], rule)
	}
	return false
}

// nearDirective matches comments that look like a //phalanx: directive,
// spelled right or not: "// phalanx:deterministic", "//phalanx: allow",
// "/* phalanx:allow */".
var nearDirective = regexp.MustCompile(`^(?://|/\*)\s*phalanx\s*(:?)\s*([A-Za-z_-]*)`)

// parseDirectives reads the //phalanx: comments of the package's non-test
// files.
func parseDirectives(pass *analysis.Pass) *directives {
	d := &directives{allows: &allows{fset: pass.Fset, lines: make(map[lineKey][]string)}}
	for _, f := range pass.Files {
		if isTestFile(pass, f) {
			continue
		}
		declDoc := make(map[*ast.CommentGroup]ast.Node)
		for _, decl := range f.Decls {
			switch decl := decl.(type) {
			case *ast.FuncDecl:
				if decl.Doc != nil {
					declDoc[decl.Doc] = decl
				}
			case *ast.GenDecl:
				if decl.Doc != nil {
					declDoc[decl.Doc] = decl
				}
			}
		}
		for _, group := range f.Comments {
			for _, c := range group.List {
				d.comment(pass, f, group, declDoc[group], c)
			}
		}
	}
	return d
}

// comment handles one comment of file f, in group, which is the doc
// comment of decl if decl is not nil.
func (d *directives) comment(pass *analysis.Pass, f *ast.File, group *ast.CommentGroup, decl ast.Node, c *ast.Comment) {
	beforePackage := c.Pos() < f.Package
	if _, ok := directive(c.Text, deterministicDirective); ok {
		if beforePackage {
			d.marked = true
		} else {
			d.problems = append(d.problems, problem{c.Pos(),
				"misplaced //phalanx:deterministic: it marks a package only in a comment above the package clause; this one has no effect"})
		}
		return
	}
	if args, ok := directive(c.Text, allowDirective); ok {
		d.allow(pass, f, group, decl, c, args)
		return
	}
	m := nearDirective.FindStringSubmatch(c.Text)
	if m == nil {
		return
	}
	word := strings.ToLower(m[2])
	if m[1] == "" && !strings.HasPrefix(word, "determ") {
		return // prose such as "phalanx allows"
	}
	switch {
	case strings.HasPrefix(word, "determ") || editDistance(word, "deterministic") <= 3:
		d.problems = append(d.problems, problem{c.Pos(), fmt.Sprintf(
			"misspelled directive %q: write //phalanx:deterministic, with no space after // and none after the colon; the package is not marked", m[0])})
	case strings.HasPrefix(word, "allow") || editDistance(word, "allow") <= 2:
		d.problems = append(d.problems, problem{c.Pos(), fmt.Sprintf(
			"misspelled directive %q: write //phalanx:allow RULE reason, with no space after // and none after the colon", m[0])})
	case strings.HasPrefix(c.Text, "//phalanx:"):
		d.problems = append(d.problems, problem{c.Pos(), fmt.Sprintf(
			"unknown directive %q: the directives are //phalanx:deterministic and //phalanx:allow", m[0])})
	}
}

// allow records one //phalanx:allow comment with arguments args.
func (d *directives) allow(pass *analysis.Pass, f *ast.File, group *ast.CommentGroup, decl ast.Node, c *ast.Comment, args string) {
	if i := strings.Index(args, "//"); i >= 0 {
		args = strings.TrimSpace(args[:i]) // a trailing comment is not the reason
	}
	ruleList, reason, _ := strings.Cut(args, " ")
	if ruleList == "" || strings.TrimSpace(reason) == "" {
		d.problems = append(d.problems, problem{c.Pos(),
			"malformed //phalanx:allow: want \"//phalanx:allow RULE reason\" with a non-empty reason"})
		return
	}
	names := strings.Split(ruleList, ",")
	for _, name := range names {
		if !slices.Contains(Rules(), name) || name == RuleDirective {
			d.problems = append(d.problems, problem{c.Pos(), fmt.Sprintf(
				"//phalanx:allow names unknown rule %q; rules are %s", name, strings.Join(Rules()[:len(Rules())-1], ", "))})
			return
		}
	}
	a := d.allows
	switch {
	case group == f.Doc:
		a.pkg = append(a.pkg, names...)
	case c.Pos() < f.Package:
		a.spans = append(a.spans, allowSpan{f.FileStart, f.FileEnd, names})
	case decl != nil:
		a.spans = append(a.spans, allowSpan{decl.Pos(), decl.End(), names})
	default:
		tf := pass.Fset.File(c.Pos())
		line := tf.Line(c.Pos())
		for _, l := range []int{line, line + 1} {
			key := lineKey{tf, l}
			a.lines[key] = append(a.lines[key], names...)
		}
	}
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

// editDistance is the Levenshtein distance between two short words.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
