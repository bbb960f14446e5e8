package archtest

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode"
)

// outsideDoc matches a citation of the design brief the project started
// from, which the repository does not contain: the word in capitals
// followed by a section number, "section" or ".md". A reader who takes the
// project over cannot follow one, so comments and docs cite docs/ instead.
var outsideDoc = regexp.MustCompile(`\bDESIGN(\.md\b|:| (section )?\d)`)

func TestCommentsAndDocsCiteOnlyTheRepository(t *testing.T) {
	eachCitingFile(t, func(p string, b []byte) {
		for i, line := range strings.Split(string(b), "\n") {
			if outsideDoc.MatchString(line) {
				t.Errorf("%s:%d cites a document outside the repository; cite docs/ instead: %s", p, i+1, strings.TrimSpace(line))
			}
		}
	})
}

// eachCitingFile calls fn with every file of the repository that may cite
// a document: Go, Markdown, TypeScript, YAML and make files, outside
// node_modules, cdk.out and hidden directories.
func eachCitingFile(t *testing.T, fn func(p string, b []byte)) {
	t.Helper()
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
		fn(p, b)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// The decision log is cited by heading: the file, a comma, the heading in
// double quotes, and more headings after "and" or a comma. A link into it
// names the heading's anchor.
const decisionsDoc = "docs/decisions.md"

var (
	decisionCitation = regexp.MustCompile(`docs/decisions\.md,? ("[^"]+"(?:(?:,| and|, and) "[^"]+")*)`)
	decisionLink     = regexp.MustCompile(`decisions\.md#([\w-]+)`)
	quotedHeading    = regexp.MustCompile(`"([^"]+)"`)
	// The decisions lived under "Decisions where the design was silent" in
	// docs/architecture.md, cited there as `"Replay" under Decisions` or
	// `Decisions: Tenant identity`; they are in docs/decisions.md now.
	architectureCitation = regexp.MustCompile(`docs/architecture\.md,? "([^"]+)"`)
	oldDecisionCitation  = regexp.MustCompile(`docs/architecture\.md,? (Decisions:|"Decisions)|" under Decisions\b`)
	markdownHeading      = regexp.MustCompile(`(?m)^## (.+?)\s*$`)
	notInAnchor          = regexp.MustCompile(`[^\p{L}\p{N}_ -]`)
)

// headings are docs/decisions.md's decisions, one per "## " heading.
func headings(doc string) map[string]bool {
	out := map[string]bool{}
	for _, m := range markdownHeading.FindAllStringSubmatch(doc, -1) {
		out[m[1]] = true
	}
	return out
}

// anchor is the fragment GitHub gives a heading: lower case, punctuation
// dropped, spaces as hyphens.
func anchor(heading string) string {
	return strings.ReplaceAll(notInAnchor.ReplaceAllString(strings.ToLower(heading), ""), " ", "-")
}

// prose is a file's text as a reader reads its citations: comment markers
// and indentation dropped, lines joined by one space (a citation may wrap),
// Go's escaped quotes unescaped; at[i] is the offset where line i+1 starts.
func prose(src string) (text string, at []int) {
	var b strings.Builder
	for _, line := range strings.Split(src, "\n") {
		at = append(at, b.Len())
		line = strings.TrimSpace(line)
		line = strings.TrimSpace(strings.TrimLeft(line, "/#*"))
		b.WriteString(strings.ReplaceAll(line, `\"`, `"`))
		b.WriteByte(' ')
	}
	return b.String(), at
}

// decisionCitationProblems lists, by line, what src cites of the decision
// log that does not hold: a heading docs/decisions.md does not have, a
// link to an anchor none of its headings makes, and a decision still cited
// in docs/architecture.md, where it no longer is.
func decisionCitationProblems(src string, decisions map[string]bool) []string {
	text, at := prose(src)
	lineOf := func(off int) int {
		n := 0
		for n < len(at) && at[n] <= off {
			n++
		}
		return n
	}
	anchors := map[string]bool{}
	for h := range decisions {
		anchors[anchor(h)] = true
	}
	var out []string
	for _, m := range decisionCitation.FindAllStringSubmatchIndex(text, -1) {
		for _, q := range quotedHeading.FindAllStringSubmatch(text[m[2]:m[3]], -1) {
			if !decisions[q[1]] {
				out = append(out, fmt.Sprintf("%d: %s has no heading %q", lineOf(m[0]), decisionsDoc, q[1]))
			}
		}
	}
	for _, m := range decisionLink.FindAllStringSubmatchIndex(text, -1) {
		if a := text[m[2]:m[3]]; !anchors[a] {
			out = append(out, fmt.Sprintf("%d: %s has no heading whose anchor is #%s", lineOf(m[0]), decisionsDoc, a))
		}
	}
	for _, m := range architectureCitation.FindAllStringSubmatchIndex(text, -1) {
		if h := text[m[2]:m[3]]; decisions[h] {
			out = append(out, fmt.Sprintf("%d: the decision %q is in %s now, not in docs/architecture.md", lineOf(m[0]), h, decisionsDoc))
		}
	}
	for _, m := range oldDecisionCitation.FindAllStringIndex(text, -1) {
		out = append(out, fmt.Sprintf("%d: the decisions are in %s now; cite one by its heading there: %s", lineOf(m[0]), decisionsDoc, text[m[0]:m[1]]))
	}
	return out
}

// TestDecisionCitationsNameAHeading: every citation of docs/decisions.md
// names one of its headings, every link into it one of their anchors, and
// nothing cites a decision in docs/architecture.md any more.
func TestDecisionCitationsNameAHeading(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "decisions.md"))
	if err != nil {
		t.Fatal(err)
	}
	decisions := headings(string(doc))
	if len(decisions) == 0 {
		t.Fatalf("%s has no \"## \" headings", decisionsDoc)
	}
	cited := 0
	eachCitingFile(t, func(p string, b []byte) {
		if filepath.Base(p) == "citations_test.go" {
			return // plants bad citations to test the check
		}
		cited += strings.Count(string(b), "decisions.md")
		for _, problem := range decisionCitationProblems(string(b), decisions) {
			t.Errorf("%s:%s", p, problem)
		}
	})
	if cited == 0 {
		t.Fatalf("nothing cites %s: the walk read no file", decisionsDoc)
	}
}

// The check itself, on planted citations: it passes good ones, wrapped or
// escaped, and fails each kind of bad one.
func TestDecisionCitationProblems(t *testing.T) {
	decisions := map[string]bool{"Replay": true, "Tenant identity": true, "Defaults are written once, in `settings.Defaults()`": true}
	cite := func(rest string) string { return decisionsDoc + rest }
	good := strings.Join([]string{
		"// the way back (" + cite(`, "Replay"): jobs`),
		"// session (" + cite(`, "Tenant`),
		`// identity"). IAM's`,
		`{"X", "desc (` + cite(`, \"Replay\")"}`),
		"see " + cite(`, "Replay" and "Tenant identity".`),
		"[Defaults](decisions.md#defaults-are-written-once-in-settingsdefaults)",
		`(docs/architecture.md, "Parked outcomes")`,
		cite(" describes the decisions."),
	}, "\n")
	if got := decisionCitationProblems(good, decisions); len(got) != 0 {
		t.Errorf("good citations reported: %q", got)
	}
	for _, c := range []struct{ src, want string }{
		{"x\n// (" + cite(`, "No such decision")`), `2: docs/decisions.md has no heading "No such decision"`},
		{cite(`, "Replay" and "Replays"`), `1: docs/decisions.md has no heading "Replays"`},
		{"[R](decisions.md#replays)", "1: docs/decisions.md has no heading whose anchor is #replays"},
		{`(docs/architecture.md, "Replay")`, `1: the decision "Replay" is in docs/decisions.md now`},
		{`(docs/architecture.md, "Replay" under Decisions)`, `1: the decision "Replay" is in docs/decisions.md now`},
		{"(docs/architecture.md, Decisions: Tenant identity)", "1: the decisions are in docs/decisions.md now"},
	} {
		got := decisionCitationProblems(c.src, decisions)
		if len(got) == 0 || !strings.HasPrefix(got[0], c.want) {
			t.Errorf("%q: got %q, want a problem starting %q", c.src, got, c.want)
		}
	}
}

// Sections move between documents (issue O split the README and
// docs/architecture.md into files of their own): a comment citing a
// section where it no longer is sends its reader nowhere. Any document of
// docs/ (and the README) is cited by heading the same way as the decision
// log; the heading must be one the cited document has, or begin it (a
// citation may shorten "Timing rules and why" to "Timing rules").
var (
	docCitation   = regexp.MustCompile(`(docs/[\w-]+\.md|README(?:\.md)?)(?:'s|,)? "([^"]+)"`)
	headingPrefix = func(heads map[string]bool, h string) bool {
		if heads[h] {
			return true
		}
		for k := range heads {
			if rest, ok := strings.CutPrefix(k, h); ok && !unicode.IsLetter(rune(rest[0])) && !unicode.IsDigit(rune(rest[0])) {
				return true
			}
		}
		return false
	}
)

// docHeadings are every heading of doc (any level), outside fenced code.
func docHeadings(doc string) map[string]bool {
	out := map[string]bool{}
	fenced := false
	for _, line := range strings.Split(doc, "\n") {
		if strings.HasPrefix(line, "```") {
			fenced = !fenced
		}
		if m := anyHeading.FindStringSubmatch(line); m != nil && !fenced {
			out[m[1]] = true
		}
	}
	return out
}

// sectionCitationProblems lists, by line, the citations in src of a
// document's section that the document (read by read) does not have.
func sectionCitationProblems(src string, read func(doc string) (map[string]bool, bool)) []string {
	text, at := prose(src)
	lineOf := func(off int) int {
		n := 0
		for n < len(at) && at[n] <= off {
			n++
		}
		return n
	}
	var out []string
	for _, m := range docCitation.FindAllStringSubmatchIndex(text, -1) {
		doc, h := text[m[2]:m[3]], text[m[4]:m[5]]
		if doc == decisionsDoc {
			continue // TestDecisionCitationsNameAHeading
		}
		if doc == "README" {
			doc = "README.md"
		}
		heads, ok := read(doc)
		switch {
		case !ok:
			out = append(out, fmt.Sprintf("%d: %s does not exist (cited for %q)", lineOf(m[0]), doc, h))
		case !headingPrefix(heads, h):
			out = append(out, fmt.Sprintf("%d: %s has no heading %q", lineOf(m[0]), doc, h))
		}
	}
	return out
}

func TestSectionCitationsNameAHeading(t *testing.T) {
	cache := map[string]map[string]bool{}
	read := func(doc string) (map[string]bool, bool) {
		if h, ok := cache[doc]; ok {
			return h, h != nil
		}
		b, err := os.ReadFile(filepath.Join("..", "..", filepath.FromSlash(doc)))
		if err != nil {
			cache[doc] = nil
			return nil, false
		}
		cache[doc] = docHeadings(string(b))
		return cache[doc], true
	}
	eachCitingFile(t, func(p string, b []byte) {
		if strings.HasSuffix(p, "citations_test.go") {
			return // its own examples
		}
		for _, problem := range sectionCitationProblems(string(b), read) {
			t.Errorf("%s:%s", p, problem)
		}
	})
}

func TestSectionCitationProblems(t *testing.T) {
	read := func(doc string) (map[string]bool, bool) {
		if doc != "docs/lanes.md" {
			return nil, false
		}
		return map[string]bool{"Cost lanes": true, "The batch lane": true}, true
	}
	for _, c := range []struct{ src, want string }{
		{`// (docs/lanes.md, "The batch lane")`, ""},
		{`// (docs/lanes.md, "Cost")`, ""}, // a shortened heading
		{`// (docs/lanes.md, "Cos")`, `1: docs/lanes.md has no heading "Cos"`},
		{"x\n// (docs/lanes.md,\n// \"The batch\n// lane\")", ""},
		{`// (docs/lanes.md, "The batch lanes")`, `1: docs/lanes.md has no heading "The batch lanes"`},
		{"x\n// (docs/architecture.md, \"Cost lanes\")", `2: docs/architecture.md does not exist (cited for "Cost lanes")`},
		{`"see docs/lanes.md's \"Batches\""`, `1: docs/lanes.md has no heading "Batches"`},
	} {
		got := strings.Join(sectionCitationProblems(c.src, read), "; ")
		if got != c.want {
			t.Errorf("%q: got %q, want %q", c.src, got, c.want)
		}
	}
}
