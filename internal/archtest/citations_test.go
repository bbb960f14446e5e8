package archtest

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// outsideDoc matches a citation of the design brief the project started
// from, which the repository does not contain: the word in capitals
// followed by a section number, "section" or ".md". A reader who takes the
// project over cannot follow one, so comments and docs cite docs/ instead.
var outsideDoc = regexp.MustCompile(`\bDESIGN(\.md\b|:| (section )?\d)`)

func TestCommentsAndDocsCiteOnlyTheRepository(t *testing.T) {
	root := filepath.Join("..", "..")
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if name == "node_modules" || name == "cdk.out" || (strings.HasPrefix(name, ".") && p != root) {
				return filepath.SkipDir
			}
			return nil
		}
		switch filepath.Ext(name) {
		case ".go", ".md", ".ts", ".yaml", ".mk":
		default:
			if name != "Makefile" {
				return nil
			}
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		for i, line := range strings.Split(string(b), "\n") {
			if outsideDoc.MatchString(line) {
				t.Errorf("%s:%d cites a document outside the repository; cite docs/ instead: %s", p, i+1, strings.TrimSpace(line))
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
