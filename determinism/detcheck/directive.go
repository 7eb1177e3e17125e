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

// allows holds the //phalanx:allow comments of one package.
type allows struct {
	fset    *token.FileSet
	entries []*allowEntry
}

// allowEntry is one //phalanx:allow comment and what it covers: the whole
// package, a span (a file or a declaration), or its line and the next.
type allowEntry struct {
	comment  token.Pos
	pkg      bool
	from, to token.Pos
	file     *token.File
	line     int
	rules    []string
	used     map[string]bool
}

// covers reports whether the entry covers pos.
func (e *allowEntry) covers(fset *token.FileSet, pos token.Pos) bool {
	switch {
	case e.pkg:
		return true
	case e.file != nil:
		l := e.file.Line(pos)
		return fset.File(pos) == e.file && (l == e.line || l == e.line+1)
	}
	return e.from <= pos && pos < e.to
}

// allowed reports whether rule is allowed at pos, and notes the allow
// comments that say so as used.
func (a *allows) allowed(pos token.Pos, rule string) bool {
	if a == nil || rule == RuleDirective {
		return false
	}
	found := false
	for _, e := range a.entries {
		if slices.Contains(e.rules, rule) && e.covers(a.fset, pos) {
			e.used[rule] = true
			found = true
		}
	}
	return found
}

// unused returns a problem for every rule of an allow comment that allowed
// nothing, among the enabled rules.
func (a *allows) unused(enabled map[string]bool) []problem {
	var ps []problem
	for _, e := range a.entries {
		for _, r := range e.rules {
			if enabled[r] && !e.used[r] {
				ps = append(ps, problem{e.comment, fmt.Sprintf(
					"//phalanx:allow %s allows nothing here; remove it (or move it to the line, function, file or package it is meant for)", r)})
			}
		}
	}
	return ps
}

// nearDirective matches comments that look like a //phalanx: directive,
// spelled right or not: "// phalanx:deterministic", "//phalanx: allow",
// "/* phalanx:allow */".
var nearDirective = regexp.MustCompile(`^(?://|/\*)\s*phalanx\s*(:?)\s*([A-Za-z_-]*)`)

// parseDirectives reads the //phalanx: comments of the package's non-test
// files.
func parseDirectives(pass *analysis.Pass) *directives {
	d := &directives{allows: &allows{fset: pass.Fset}}
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
	e := &allowEntry{comment: c.Pos(), rules: names, used: make(map[string]bool)}
	switch {
	case group == f.Doc:
		e.pkg = true
	case c.Pos() < f.Package:
		e.from, e.to = f.FileStart, f.FileEnd
	case decl != nil:
		e.from, e.to = decl.Pos(), decl.End()
	default:
		e.file = pass.Fset.File(c.Pos())
		e.line = e.file.Line(c.Pos())
	}
	d.allows.entries = append(d.allows.entries, e)
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
