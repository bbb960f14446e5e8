package archtest

import (
	"fmt"
	"io/fs"
	"os"
	slashpath "path"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"testing/fstest"
)

// Sections move between documents (the README's reference parts and the
// features' designs left for files of their own); a link left pointing
// at the old place sends a newcomer nowhere, and nothing else notices.
var (
	markdownLink = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	hasScheme    = regexp.MustCompile(`^[a-z][a-z0-9+.-]*:`)
	anyHeading   = regexp.MustCompile(`^#{1,6} (.+?)\s*$`)
)

// headingAnchors are the anchors a Markdown document's headings make,
// outside fenced code (where a line starting with # is a shell comment).
func headingAnchors(doc string) map[string]bool {
	out := map[string]bool{}
	for h := range docHeadings(doc) {
		out[anchor(h)] = true
	}
	return out
}

// linkProblems lists, by line, the relative links of the document at p
// (a slash path in fsys) that name no file, or an anchor no heading of
// the Markdown file they name makes.
func linkProblems(fsys fs.FS, p string) ([]string, error) {
	src, err := fs.ReadFile(fsys, p)
	if err != nil {
		return nil, err
	}
	var out []string
	for i, line := range strings.Split(string(src), "\n") {
		for _, m := range markdownLink.FindAllStringSubmatch(line, -1) {
			target := m[1]
			if hasScheme.MatchString(target) {
				continue
			}
			file, frag, _ := strings.Cut(target, "#")
			to := p
			if file != "" {
				to = slashpath.Join(slashpath.Dir(p), file)
			}
			doc, err := fs.ReadFile(fsys, to)
			if err != nil {
				out = append(out, fmt.Sprintf("%s:%d: %s names no file", p, i+1, target))
				continue
			}
			if frag != "" && strings.HasSuffix(to, ".md") && !headingAnchors(string(doc))[frag] {
				out = append(out, fmt.Sprintf("%s:%d: %s names no heading of %s", p, i+1, target, to))
			}
		}
	}
	return out, nil
}

// TestDocLinksResolve: every relative link of the README and of docs/
// names a file that exists, and a heading of it when it names an anchor.
func TestDocLinksResolve(t *testing.T) {
	root := os.DirFS(filepath.Join("..", ".."))
	docs, err := fs.Glob(root, "docs/*.md")
	if err != nil || len(docs) == 0 {
		t.Fatalf("no docs/*.md found (%v): the check read nothing", err)
	}
	for _, p := range append(docs, "README.md") {
		problems, err := linkProblems(root, p)
		if err != nil {
			t.Fatal(err)
		}
		for _, problem := range problems {
			t.Error(problem)
		}
	}
}

// The check itself, on planted links: it passes good ones and fails a
// missing file and a missing heading.
func TestLinkProblemsFindsBrokenLinks(t *testing.T) {
	fsys := fstest.MapFS{
		"README.md":  {Data: []byte("[a](docs/a.md) [h](docs/a.md#the-batch-lane) [w](https://x.example/y#z)\n[gone](docs/gone.md)\n")},
		"docs/a.md":  {Data: []byte("# A\n\n## The batch lane\n\n```sh\n# not a heading\n```\n[self](#a) [img](p.png) [up](../README.md)\n[bad](#not-a-heading)\n")},
		"docs/p.png": {Data: []byte{}},
		"docs/b.md":  {Data: []byte("[old](a.md#cost-lanes)\n")},
	}
	want := map[string][]string{
		"README.md": {"README.md:2: docs/gone.md names no file"},
		"docs/a.md": {"docs/a.md:9: #not-a-heading names no heading of docs/a.md"},
		"docs/b.md": {"docs/b.md:1: a.md#cost-lanes names no heading of docs/a.md"},
	}
	for p, w := range want {
		got, err := linkProblems(fsys, p)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Join(got, "\n") != strings.Join(w, "\n") {
			t.Errorf("%s: got %q, want %q", p, got, w)
		}
	}
	if headingAnchors("```\n# comment\n```\n")["comment"] {
		t.Error("a shell comment in fenced code was taken for a heading")
	}
}

// unlisted are the documents of names the index does not link to.
func unlisted(index string, names []string) []string {
	var out []string
	for _, n := range names {
		if !strings.Contains(index, "]("+n+")") {
			out = append(out, n)
		}
	}
	return out
}

// TestTheDocsIndexListsEveryDoc: docs/README.md is the reading order a
// newcomer follows, so a document missing from it is one nobody finds.
func TestTheDocsIndexListsEveryDoc(t *testing.T) {
	root := os.DirFS(filepath.Join("..", ".."))
	index, err := fs.ReadFile(root, "docs/README.md")
	if err != nil {
		t.Fatal(err)
	}
	docs, err := fs.Glob(root, "docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range docs {
		if n := slashpath.Base(p); n != "README.md" {
			names = append(names, n)
		}
	}
	if len(names) == 0 {
		t.Fatal("no docs/*.md found: the check read nothing")
	}
	for _, n := range unlisted(string(index), names) {
		t.Errorf("docs/README.md does not list docs/%s", n)
	}
	if got := unlisted("[a](a.md) see b.md", []string{"a.md", "b.md"}); len(got) != 1 || got[0] != "b.md" {
		t.Errorf("a document named but not linked was not reported: %q", got)
	}
}
