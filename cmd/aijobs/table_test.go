package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"
	"unicode"

	"github.com/aijobs/aijobs/pkg/client"
	"github.com/aijobs/aijobs/pkg/job"
)

// evil holds what a terminal obeys or hides: a screen clear, a window
// title set (OSC ... BEL), a C1 CSI, a bidi override, a line break,
// a tab that would shift the columns, and a byte that is not UTF-8.
const evil = "jwt:evil\x1b[2J\x1b]0;owned\x07\u009b31m\u202eexe.txt\u2028\tx\xff"

// TestTablesEscapeWhatATerminalWouldObey: records written before the API
// refused such identities (and metadata or results as sent) reach the
// operator's terminal through every table; each cell shows them escaped
// (issue O item 5.4).
func TestTablesEscapeWhatATerminalWouldObey(t *testing.T) {
	at := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	var out bytes.Buffer
	if err := printFailures(&out, failuresReport{Since: at, Until: at, ByClass: []total{{Key: evil}},
		Failures: []failureRow{{ID: "job_1", Tenant: evil, Model: evil, InputHash: "sha256:x", EndedAt: at}}}); err != nil {
		t.Fatal(err)
	}
	if err := printQuarantines(&out, []quarantineRow{{Tenant: evil, Route: "default", InputHash: "sha256:x", Since: at, Until: at}}); err != nil {
		t.Fatal(err)
	}
	if err := printLift(&out, liftReport{Tenant: evil, Route: "default", InputHash: "sha256:x"}); err != nil {
		t.Fatal(err)
	}
	v := client.View{ID: "job_1", Model: evil, Metadata: json.RawMessage(`{"k":"` + "\u009b2J\u202e" + `"}`)}
	if err := printView(&out, "table", v); err != nil {
		t.Fatal(err)
	}
	if err := printPage(&out, "table", client.Page{Jobs: []client.Summary{{ID: "job_1", Model: evil}}}); err != nil {
		t.Fatal(err)
	}
	s := out.String()
	for i, r := range strings.ToValidUTF8(s, "\ufffd") {
		if r != '\n' && unicode.In(r, unicode.Cc, unicode.Cf, unicode.Zl, unicode.Zp) {
			t.Fatalf("rune %U at %d reaches the terminal:\n%q", r, i, s)
		}
	}
	if n := strings.Count(s, `jwt:evil\x1b[2J\x1b]0;owned\a\u009b31m\u202eexe.txt\u2028\tx\xff`); n != 7 {
		t.Errorf("%d cells show the value escaped, want 7 (failures: class, tenant and model; quarantines; lift; the job's model; the page's model):\n%s", n, s)
	}
	if strings.Contains(s, "\ufffd") || !strings.Contains(s, `jwt:evil\x1b[2J\x1b]0;owned\a\u009b31m\u202eexe.txt\u2028\tx\xff`) {
		t.Fatalf("the tenant is not shown escaped:\n%s", s)
	}
	if n := strings.Count(s, `\u009b2J\u202e`); n != 1 {
		t.Errorf("the metadata is shown escaped %d times, want once:\n%s", n, s)
	}
}

// TestACleanCellIsUnchanged: letters beyond ASCII, spaces and
// backslashes are shown as they are.
func TestACleanCellIsUnchanged(t *testing.T) {
	for _, s := range []string{"", "tenant a", "Zoë 用户 🙂", `C:\path`, "a\u00a0b", string(job.Succeeded)} {
		if got := cell(s); got != s {
			t.Errorf("cell(%q) = %q", s, got)
		}
	}
}
