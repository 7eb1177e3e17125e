package layering

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/phalanx-net/phalanx/"

// row is one line of the package table: a package and the packages of the
// module it imports, as the document states them.
type row struct {
	pkg     string
	imports []string
	line    int
}

// pkgInfo is one package as go list sees it.
type pkgInfo struct {
	imports []string // of the module, without tests
	tests   []string // of the module, by its tests (internal and external)
}

// readTable parses the table under "## Packages" of the architecture
// document: the first column names the package, the last its imports of the
// module ("—" for none), each name in backquotes.
func readTable(t *testing.T, path string) []row {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var rows []row
	in := false
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		l := sc.Text()
		switch {
		case strings.HasPrefix(l, "## "):
			in = l == "## Packages"
		case in && strings.HasPrefix(l, "| `"):
			cells := strings.Split(strings.Trim(l, "|"), "|")
			if len(cells) < 3 {
				t.Fatalf("%s:%d: want three columns: %s", path, n, l)
			}
			name := quoted(cells[0])
			if len(name) != 1 {
				t.Fatalf("%s:%d: first column names %d packages, want one", path, n, len(name))
			}
			imports := quoted(cells[len(cells)-1])
			if strings.TrimSpace(cells[len(cells)-1]) == "—" {
				imports = nil
			} else if len(imports) == 0 {
				t.Fatalf("%s:%d: imports column %q is neither \"—\" nor a list of `package`s", path, n, cells[len(cells)-1])
			}
			slices.Sort(imports)
			rows = append(rows, row{pkg: name[0], imports: imports, line: n})
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(rows) == 0 {
		t.Fatalf("%s: no package table under \"## Packages\"", path)
	}
	return rows
}

// quoted returns the backquoted words of s.
func quoted(s string) []string {
	var out []string
	for {
		i := strings.IndexByte(s, '`')
		if i < 0 {
			return out
		}
		j := strings.IndexByte(s[i+1:], '`')
		if j < 0 {
			return out
		}
		out = append(out, s[i+1:i+1+j])
		s = s[i+1+j+1:]
	}
}

// listPackages runs go list over the module rooted at root.
func listPackages(t *testing.T, root string) map[string]pkgInfo {
	t.Helper()
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command on PATH to list the packages")
	}
	cmd := exec.Command(goTool, "list", "-f",
		"{{.ImportPath}}\t{{join .Imports \" \"}}\t{{join .TestImports \" \"}} {{join .XTestImports \" \"}}", "./...")
	cmd.Dir = root
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.Bytes())
	}
	ours := func(s string) []string {
		var r []string
		for _, p := range strings.Fields(s) {
			if rel, ok := strings.CutPrefix(p, module); ok {
				r = append(r, rel)
			}
		}
		slices.Sort(r)
		return slices.Compact(r)
	}
	pkgs := make(map[string]pkgInfo)
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Split(l, "\t")
		if len(f) != 3 {
			t.Fatalf("go list printed %q", l)
		}
		name, ok := strings.CutPrefix(f[0], module)
		if !ok {
			t.Fatalf("go list printed package %q outside the module", f[0])
		}
		pkgs[name] = pkgInfo{imports: ours(f[1]), tests: ours(f[2])}
	}
	return pkgs
}

// TestImportGraph holds docs/architecture.md's package table to go list:
// every package of the module has a row, every row a package; each row's
// imports column lists exactly the module's packages the package imports;
// and no package, nor its tests, imports a package listed below it.
func TestImportGraph(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	doc := filepath.Join(root, "docs", "architecture.md")
	rows := readTable(t, doc)
	pkgs := listPackages(t, root)

	var problems []string
	report := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	pos := make(map[string]int)
	for i, r := range rows {
		if _, dup := pos[r.pkg]; dup {
			report("line %d: `%s` has a second row", r.line, r.pkg)
		}
		pos[r.pkg] = i
		p, ok := pkgs[r.pkg]
		if !ok {
			report("line %d: `%s` is in the table but not in the module", r.line, r.pkg)
			continue
		}
		if !slices.Equal(r.imports, p.imports) {
			report("line %d: `%s` imports (of ours)\n\ttable:   %s\n\tgo list: %s", r.line, r.pkg, column(r.imports), column(p.imports))
		}
	}
	var missing []string
	for name := range pkgs {
		if _, ok := pos[name]; !ok {
			missing = append(missing, name)
		}
	}
	slices.Sort(missing)
	for _, name := range missing {
		report("`%s` is in the module but has no row; its imports: %s", name, column(pkgs[name].imports))
	}
	for i, r := range rows {
		p := pkgs[r.pkg]
		deps := slices.Concat(p.imports, p.tests)
		slices.Sort(deps)
		for _, dep := range slices.Compact(deps) {
			if j, ok := pos[dep]; ok && dep != r.pkg && j > i {
				report("line %d: `%s` (or its tests) imports `%s`, listed below it at line %d", r.line, r.pkg, dep, rows[j].line)
			}
		}
	}
	if len(problems) > 0 {
		t.Errorf("%s does not match go list:\n%s", doc, strings.Join(problems, "\n"))
	}
}

// column renders imports as the table's last column does.
func column(imports []string) string {
	if len(imports) == 0 {
		return "—"
	}
	q := make([]string, len(imports))
	for i, p := range imports {
		q[i] = "`" + p + "`"
	}
	return strings.Join(q, ", ")
}
