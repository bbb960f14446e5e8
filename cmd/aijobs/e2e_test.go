package main

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aijobs/aijobs/pkg/client"
	"github.com/aijobs/aijobs/pkg/client/clienttest"
	"github.com/aijobs/aijobs/pkg/job"
)

func jsonUnmarshal(s string, v any) error {
	dec := json.NewDecoder(strings.NewReader(s))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}

// hasRow reports whether a table has a line "key <spaces> value".
func hasRow(out, key, value string) bool {
	for _, line := range strings.Split(out, "\n") {
		k, v, ok := strings.Cut(line, " ")
		if ok && k == key && strings.TrimLeft(v, " ") == value {
			return true
		}
	}
	return false
}

// view parses a command's JSON output: exactly one line, one job.
func view(t *testing.T, r result) client.View {
	t.Helper()
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	if strings.Count(r.stdout, "\n") != 1 {
		t.Fatalf("stdout is not one line of JSON: %q", r.stdout)
	}
	var v client.View
	if err := jsonUnmarshal(r.stdout, &v); err != nil {
		t.Fatalf("stdout %q: %v", r.stdout, err)
	}
	return v
}

func TestSubmitGetCancel(t *testing.T) {
	srv := clienttest.Start(t)
	env := map[string]string{"AIJOBS_ENDPOINT": srv.URL, "AIJOBS_TOKEN": "tenant-a"}

	created := view(t, invocation{env: env, args: args("submit", "--key", "report-1", "--prompt", "Summarise Q3",
		"--max-tokens", "64", "--budget-cents", "12.5", "--deadline", "10m", "--max-attempts", "2", "--metadata", `{"ticket":"OPS-1"}`)}.run(t))
	if created.ID != clienttest.ID("tenant-a", "report-1") || created.State != job.Queued || created.BudgetCents.String() != "12.5" ||
		created.MaxAttempts != 2 || string(created.Metadata) != `{"ticket":"OPS-1"}` || !created.Deadline.Equal(clienttest.T0.Add(600e9)) {
		t.Errorf("created = %+v", created)
	}
	if h := srv.Requests()[0].Header; h.Get("Authorization") != "Bearer tenant-a" || h.Get("User-Agent") != "aijobs-cli" {
		t.Errorf("request headers = %v", h)
	}

	// The same body again is a replay (noted on stderr), from a file this time.
	body := `{"input":{"messages":[{"role":"user","content":"Summarise Q3"}],"max_tokens":64},
	          "budget_cents":12.5,"deadline_seconds":600,"max_attempts":2,"metadata":{"ticket":"OPS-1"}}`
	path := filepath.Join(t.TempDir(), "body.json")
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	r := invocation{env: env, args: args("submit", "--key", "report-1", "--body", path)}.run(t)
	if again := view(t, r); again.ID != created.ID || !strings.Contains(r.stderr, "repeated") {
		t.Errorf("replay = %+v, stderr %q", again, r.stderr)
	}
	// Another body under the key: 422, exit 4, the code on stderr.
	r = invocation{env: env, args: args("submit", "--key", "report-1"), stdin: `{"input":{"messages":[{"role":"user","content":"other"}]}}`}.run(t)
	if r.code != 4 || r.stderr != "aijobs: idempotency_key_reused (422): this Idempotency-Key was used with a different request body (field Idempotency-Key)\n" {
		t.Errorf("reused key: exit %d, stderr %q", r.code, r.stderr)
	}

	got := view(t, invocation{env: env, args: args("get", created.ID)}.run(t))
	if got.ID != created.ID || got.Version != 1 {
		t.Errorf("get = %+v", got)
	}
	// Global flags after the id; a table on request.
	r = invocation{env: env, args: args("get", created.ID, "--output", "table")}.run(t)
	for _, want := range [][2]string{{"state", "queued"}, {"attempts", "0/2"}, {"cost", "0 of 12.5 cents"}, {"metadata", `{"ticket":"OPS-1"}`}} {
		if !hasRow(r.stdout, want[0], want[1]) {
			t.Errorf("table lacks %s = %s:\n%s", want[0], want[1], r.stdout)
		}
	}

	// Another tenant: 404, exit 4, and the token is never printed.
	r = invocation{args: args("--endpoint", srv.URL, "--token", "tenant-b", "cancel", created.ID)}.run(t)
	if r.code != 4 || r.stderr != "aijobs: not_found (404): no such job\n" {
		t.Errorf("other tenant's cancel: exit %d, stderr %q", r.code, r.stderr)
	}

	cancelled := view(t, invocation{env: env, args: args("cancel", created.ID)}.run(t))
	if cancelled.State != job.Abandoned || cancelled.Class() != job.Cancelled {
		t.Errorf("cancelled = %+v", cancelled)
	}
	if again := view(t, invocation{env: env, args: args("cancel", created.ID)}.run(t)); again.Version != cancelled.Version {
		t.Errorf("second cancel = %+v", again)
	}

	// A finished job cannot be cancelled: 409 already_finished.
	done := view(t, invocation{env: env, args: args("submit", "--key", "k2", "--prompt", "x")}.run(t))
	srv.Claim(t, done.ID)
	srv.Succeed(t, done.ID, 5, clienttest.Result("ok"))
	r = invocation{env: env, args: args("cancel", done.ID)}.run(t)
	if r.code != 4 || !strings.HasPrefix(r.stderr, "aijobs: already_finished (409): ") {
		t.Errorf("cancel of a succeeded job: exit %d, stderr %q", r.code, r.stderr)
	}

	// No token: API Gateway's authorizer answers 401 itself (no problem code).
	r = invocation{args: args("--endpoint", srv.URL, "get", created.ID)}.run(t)
	if r.code != 4 || !strings.HasPrefix(r.stderr, "aijobs: http_401 (401): Unauthorized") {
		t.Errorf("no token: exit %d, stderr %q", r.code, r.stderr)
	}
	if srv.Store.Len() != 2 {
		t.Errorf("store holds %d jobs, want 2", srv.Store.Len())
	}
}

func TestWait(t *testing.T) {
	srv := clienttest.Start(t)
	env := map[string]string{"AIJOBS_ENDPOINT": srv.URL, "AIJOBS_TOKEN": "tenant-a"}
	submit := func(key string) client.View {
		return view(t, invocation{env: env, args: args("submit", "--key", key, "--prompt", "x")}.run(t))
	}

	t.Run("piped: no progress bar, one JSON view, exit 0", func(t *testing.T) {
		v := submit("piped")
		r := invocation{env: env, args: args("wait", v.ID), steps: []func(){
			func() { srv.Claim(t, v.ID) },
			func() { srv.Progress(t, v.ID, 0.4) },
			func() { srv.Succeed(t, v.ID, 42e7, clienttest.Result("done")) },
		}}.run(t)
		final := view(t, r)
		if final.State != job.Succeeded || final.CostCents.String() != "0.42" || string(final.Result) != clienttest.Result("done") {
			t.Errorf("final = %+v", final)
		}
		if strings.ContainsAny(r.stdout, "\r\x1b") || strings.Contains(r.stdout, "[#") || strings.Contains(r.stdout, "attempt ") {
			t.Errorf("piped output has a progress bar: %q", r.stdout)
		}
	})

	t.Run("terminal: the bar is redrawn in place, then the table", func(t *testing.T) {
		v := submit("tty")
		r := invocation{env: env, stdoutTTY: true, args: args("wait", v.ID), steps: []func(){
			func() { srv.Claim(t, v.ID) },
			func() { srv.Progress(t, v.ID, 0.5) },
			func() { srv.Succeed(t, v.ID, job.Cents(1), clienttest.Result("done")) },
		}}.run(t)
		if r.code != 0 {
			t.Fatalf("exit %d: %s", r.code, r.stderr)
		}
		for _, want := range []string{
			"\r\x1b[K[--------------------]   0%  queued  attempt 0/4  cost 0 of 50 cents",
			"\r\x1b[K[----------" + "----------]   0%  running  attempt 1/4",
			"\r\x1b[K[##########----------]  50%  running  attempt 1/4  cost 0 of 50 cents",
			"\r\x1b[K[####################] 100%  succeeded  attempt 1/4  cost 1 of 50 cents\n",
		} {
			if !strings.Contains(r.stdout, want) {
				t.Errorf("output lacks %q:\n%q", want, r.stdout)
			}
		}
		if !hasRow(r.stdout, "state", "succeeded") {
			t.Errorf("no final table:\n%s", r.stdout)
		}
	})

	t.Run("failed: exit 1", func(t *testing.T) {
		v := submit("failed")
		r := invocation{env: env, args: args("wait", v.ID), steps: []func(){
			func() { srv.Claim(t, v.ID); srv.End(t, v.ID, 7, job.ContentFiltered) },
		}}.run(t)
		if r.code != 1 || view(t, result{stdout: r.stdout}).State != job.Failed ||
			r.stderr != "aijobs: job "+v.ID+" failed: content_filtered after 1 attempt(s), cost 0.000000007 cents\n" {
			t.Errorf("exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
		}
	})

	t.Run("abandoned: exit 3", func(t *testing.T) {
		v := submit("abandoned")
		r := invocation{env: env, args: args("wait", v.ID), steps: []func(){
			func() { invocation{env: env, args: args("cancel", v.ID)}.run(t) },
		}}.run(t)
		if r.code != 3 || !strings.Contains(r.stderr, "abandoned: cancelled") {
			t.Errorf("exit %d, stderr %q", r.code, r.stderr)
		}
	})

	t.Run("timeout: exit 6 with the last view", func(t *testing.T) {
		v := submit("slow")
		// Long enough for the first poll to answer on a loaded machine (at
		// 50 ms it once did not: "job ... is not seen", no view to print).
		r := invocation{env: env, block: true, args: args("wait", "--timeout", "1s", v.ID)}.run(t)
		if r.code != 6 || r.stderr != "aijobs: wait timed out after 1s: job "+v.ID+" is still queued\n" {
			t.Errorf("exit %d, stderr %q", r.code, r.stderr)
		}
		if last := view(t, result{stdout: r.stdout}); last.ID != v.ID {
			t.Errorf("last view = %+v", last)
		}
	})

	t.Run("submit --wait", func(t *testing.T) {
		var id string
		r := invocation{env: env, args: args("submit", "--key", "and-wait", "--prompt", "x", "--wait"), steps: []func(){
			func() {
				id = clienttest.ID("tenant-a", "and-wait")
				srv.Claim(t, id)
				srv.Succeed(t, id, 1, clienttest.Result("ok"))
			},
		}}.run(t)
		if v := view(t, r); v.ID != id || v.State != job.Succeeded {
			t.Errorf("final = %+v", v)
		}
	})
}

func TestListFollowsCursors(t *testing.T) {
	pages := map[string]string{
		"":   `{"jobs":[{"id":"job_aaaaaaaaaaaaaaaaaaaaaaaaaa","state":"failed","error_class":"rate_limited","cost_cents":1.5,"budget_cents":50,"version":3}],"next_cursor":"c1"}`,
		"c1": `{"jobs":[{"id":"job_bbbbbbbbbbbbbbbbbbbbbbbbbb","state":"failed","error_class":"rate_limited","cost_cents":0.25,"budget_cents":50,"version":4}],"next_cursor":null}`,
	}
	var queries []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		queries = append(queries, r.URL.RawQuery)
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, pages[r.URL.Query().Get("cursor")])
	}))
	defer srv.Close()
	base := args("list", "--endpoint", srv.URL, "--token", "ops", "--state", "failed", "--error-class", "rate_limited", "--since", "24h", "--limit", "1")

	r := invocation{args: base}.run(t)
	var one client.Page
	if err := json.Unmarshal([]byte(r.stdout), &one); err != nil || r.code != 0 || len(one.Jobs) != 1 || one.NextCursor != "c1" {
		t.Fatalf("one page: exit %d, %q, %v", r.code, r.stdout, err)
	}
	if queries[0] != "error_class=rate_limited&limit=1&since=2026-12-01T10%3A00%3A00Z&state=failed" {
		t.Errorf("query = %s", queries[0])
	}

	r = invocation{args: append(base, "--all")}.run(t)
	if r.code != 0 || !bytes.Contains([]byte(r.stdout), []byte(`"next_cursor":null`)) {
		t.Fatalf("all: exit %d, %q", r.code, r.stdout)
	}
	var all client.Page
	if err := json.Unmarshal([]byte(r.stdout), &all); err != nil || len(all.Jobs) != 2 || all.Jobs[1].CostCents.String() != "0.25" {
		t.Errorf("all pages = %+v, %v", all, err)
	}

	r = invocation{args: append(base, "--output", "table")}.run(t)
	for _, want := range []string{"job_aaaaaaaaaaaaaaaaaaaaaaaaaa  failed  rate_limited", "more: --cursor c1"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("table lacks %q:\n%s", want, r.stdout)
		}
	}

	pages["c1"] = `{"jobs":[],"next_cursor":"c1"}` // a cursor that never ends
	r = invocation{args: append(base, "--all")}.run(t)
	if r.code != 4 || !strings.Contains(r.stderr, "same cursor twice") {
		t.Errorf("looping cursor: exit %d, stderr %q", r.code, r.stderr)
	}
}

func TestSigV4FromTheAWSConfig(t *testing.T) {
	var auth, token string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		auth, token = r.Header.Get("Authorization"), r.Header.Get("X-Amz-Security-Token")
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"id":"job_aaaaaaaaaaaaaaaaaaaaaaaaaa","state":"running","version":2}`)
	}))
	defer srv.Close()
	r := invocation{args: args("get", "--endpoint", srv.URL, "--sigv4", "job_aaaaaaaaaaaaaaaaaaaaaaaaaa"), loadAWS: awsConfig("eu-west-1", nil)}.run(t)
	if r.code != 0 || !strings.HasPrefix(auth, "AWS4-HMAC-SHA256 Credential=AKID/20261202/eu-west-1/execute-api/aws4_request") || token != "" {
		t.Errorf("exit %d (%s), authorization %q", r.code, r.stderr, auth)
	}
	if strings.Contains(r.stdout+r.stderr, "SECRET") {
		t.Error("output shows the secret key")
	}
}
