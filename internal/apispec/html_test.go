package apispec

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
)

// rendered is docs/openapi.yaml and its page.
func rendered(t *testing.T) (*openapi3.T, []byte) {
	t.Helper()
	doc, err := Load(Path())
	if err != nil {
		t.Fatal(err)
	}
	page, err := HTML(doc)
	if err != nil {
		t.Fatal(err)
	}
	return doc, page
}

// TestTheHTMLReferenceIsTheDocument: docs/api.html is docs/openapi.yaml
// rendered now; a change to the document must regenerate it (make docs).
func TestTheHTMLReferenceIsTheDocument(t *testing.T) {
	_, want := rendered(t)
	got, err := os.ReadFile(filepath.Join(filepath.Dir(Path()), "api.html"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatal("docs/api.html is stale: run make docs")
	}
}

// TestTheHTMLReferenceWorksOffline: nothing on the page is fetched from
// elsewhere and nothing runs; every operation and schema is on it.
func TestTheHTMLReferenceWorksOffline(t *testing.T) {
	doc, page := rendered(t)
	s := string(page)
	for _, banned := range []string{"<script", "<link", "src=", "@import", "url("} {
		if strings.Contains(s, banned) {
			t.Errorf("the page holds %q", banned)
		}
	}
	for path, item := range doc.Paths.Map() {
		for _, op := range item.Operations() {
			if !strings.Contains(s, `id="op-`+op.OperationID+`"`) {
				t.Errorf("%s (%s) is not on the page", op.OperationID, path)
			}
		}
	}
	for name := range doc.Components.Schemas {
		if !strings.Contains(s, `id="schema-`+name+`"`) {
			t.Errorf("schema %s is not on the page", name)
		}
	}
}
