package archtest

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The house limits (docs/decisions.md, "Layering and size are tests, not
// pictures"): a function over maxLines lines or over maxParams parameters
// says why, in a comment that ends on the line
// above it (its doc comment, for a declared function) and holds "long
// because" or "parameters because". Tests are exempt.
const (
	maxLines  = 80
	maxParams = 5
)

var (
	longBecause = regexp.MustCompile(`(?i)\blong because\b`)
	wideBecause = regexp.MustCompile(`(?i)\bparameters because\b`)
)

// oversized lists the functions of one file that break a limit without
// saying why, as "file:line name: what".
func oversized(fset *token.FileSet, f *ast.File, name string) []string {
	above := map[int]string{} // the text of each comment group, by the line it ends on
	for _, g := range f.Comments {
		above[fset.Position(g.End()).Line] = g.Text()
	}
	var out []string
	ast.Inspect(f, func(n ast.Node) bool {
		var typ *ast.FuncType
		var body *ast.BlockStmt
		fn := "a function literal"
		switch d := n.(type) {
		case *ast.FuncDecl:
			typ, body, fn = d.Type, d.Body, d.Name.Name
		case *ast.FuncLit:
			typ, body = d.Type, d.Body
		default:
			return true
		}
		if body == nil {
			return true
		}
		start := fset.Position(n.Pos()).Line
		lines := fset.Position(body.End()).Line - start + 1
		params := 0
		for _, p := range typ.Params.List {
			params += max(len(p.Names), 1)
		}
		why := above[start-1]
		if lines > maxLines && !longBecause.MatchString(why) {
			out = append(out, fmt.Sprintf("%s:%d %s: %d lines, and no comment above it says why it is long (\"long because\")", name, start, fn, lines))
		}
		if params > maxParams && !wideBecause.MatchString(why) {
			out = append(out, fmt.Sprintf("%s:%d %s: %d parameters, and no comment above it says why (\"parameters because\")", name, start, fn, params))
		}
		return true
	})
	return out
}

// TestFunctionsKeepToTheSizeLimits: no function of the repository (the
// infra module included, tests not) is over the limits without a reason
// written next to it.
func TestFunctionsKeepToTheSizeLimits(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	var bad []string
	err = filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			switch d.Name() {
			case "node_modules", ".git", "testdata", "cdk.out", "bin", "dist":
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, p, nil, parser.ParseComments)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		bad = append(bad, oversized(fset, f, filepath.ToSlash(rel))...)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range bad {
		t.Error(b)
	}
}

// TestTheSizeRuleFailsOnAPlantedViolation: a long function and a wide one
// without a reason are reported; with one, and within the limits, they
// are not.
func TestTheSizeRuleFailsOnAPlantedViolation(t *testing.T) {
	long := "func long() {\n" + strings.Repeat("\t_ = 1\n", maxLines) + "}\n"
	for _, tt := range []struct {
		name, src string
		want      int
	}{
		{"a long function", long, 1},
		{"a long function that says why", "// It is long because a table reads best whole.\n" + long, 0},
		{"a wide function", "func wide(a, b, c, d, e, f int) {}\n", 1},
		{"a wide function that says why", "// It takes six parameters because the API does.\nfunc wide(a, b, c, d, e, f int) {}\n", 0},
		{"a wide literal", "var f = func(a, b, c, d, e, f int) {}\n", 1},
		{"within the limits", "func small(a, b, c, d, e int) {}\n", 0},
	} {
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, "planted.go", "package planted\n\n"+tt.src, parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		if got := oversized(fset, f, "planted.go"); len(got) != tt.want {
			t.Errorf("%s: %d violations %v, want %d", tt.name, len(got), got, tt.want)
		}
	}
}
