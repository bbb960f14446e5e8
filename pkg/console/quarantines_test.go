package console_test

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aijobs/aijobs/pkg/console"
	"github.com/aijobs/aijobs/pkg/job"
	"github.com/aijobs/aijobs/pkg/memstore"
)

const (
	hashA = "sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	hashB = "sha256:bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
	hashC = "sha256:cccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccc"
)

// quarantineFixture serves a console over qs (nil: quarantine off) with
// three quarantines in it: two of tenant jwt:a in force, one of jwt:b in
// force, and one of jwt:a that expired.
func quarantineFixture(t *testing.T, off bool) (*fixture, *memstore.Quarantines) {
	t.Helper()
	qs := memstore.NewQuarantines()
	ctx := context.Background()
	for _, q := range []job.Quarantine{
		{Tenant: "jwt:a", Model: "default", InputHash: hashA, Class: job.ContentFiltered, JobID: "job_a1", At: now.Add(-time.Hour), Until: now.Add(23 * time.Hour)},
		{Tenant: "jwt:a", Model: "reports", InputHash: hashB, Class: job.ContextLengthExceeded, JobID: "job_a2", At: now.Add(-2 * time.Hour), Until: now.Add(22 * time.Hour)},
		{Tenant: "jwt:b", Model: "default", InputHash: hashA, Class: job.InvalidRequest, JobID: "job_b1", At: now.Add(-3 * time.Hour), Until: now.Add(21 * time.Hour)},
		{Tenant: "jwt:a", Model: "default", InputHash: hashC, Class: job.ContentFiltered, JobID: "job_old", At: now.Add(-25 * time.Hour), Until: now.Add(-time.Hour)},
	} {
		if err := qs.Quarantine(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	f := &fixture{store: &counting{Store: memstore.New()}, log: &bytes.Buffer{}, token: token, clock: clock{at: &atomic.Int64{}}}
	f.clock.at.Store(now.UnixMilli())
	cfg := console.Config{Store: f.store, Who: "arn:aws:iam::123456789012:user/ops", Log: slog.New(slog.NewTextHandler(f.log, nil)),
		Clock: f.clock, Token: token, Access: access}
	if !off {
		cfg.Quarantines = qs
	}
	c, err := console.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	f.srv = httptest.NewServer(c)
	t.Cleanup(f.srv.Close)
	return f, qs
}

func TestTheQuarantinePageListsWhatIsInForce(t *testing.T) {
	f, _ := quarantineFixture(t, false)
	code, body := f.get(t, "/quarantines")
	if code != 200 {
		t.Fatalf("quarantines: %d %s", code, body)
	}
	wantAll(t, "quarantines", body, `id="in-force">3<`, "Scan of the quarantine table", `data-job="job_a1"`, `data-job="job_a2"`,
		`data-job="job_b1"`, "content_filtered", "context_length_exceeded", hashB, `href="/jobs/job_a1"`, "reports",
		`action="/quarantines/lift"`, `name="csrf" value="test-token"`, `name="input_hash" value="`+hashA, `class="on">Quarantines<`)
	if strings.Contains(body, "job_old") {
		t.Error("the page lists an expired quarantine")
	}
	if strings.Index(body, "job_a1") > strings.Index(body, "job_b1") {
		t.Error("the page is not newest first")
	}
	code, body = f.get(t, "/quarantines?tenant=jwt:b")
	if code != 200 || !strings.Contains(body, `id="in-force">1<`) || !strings.Contains(body, "job_b1") || strings.Contains(body, "job_a1") ||
		!strings.Contains(body, "one Query") {
		t.Fatalf("one tenant's: %d %s", code, body)
	}
	if _, body = f.get(t, "/"); !strings.Contains(body, `href="/quarantines"`) {
		t.Error("the nav has no quarantines page")
	}
}

func TestWithoutAQuarantineStoreThePageSaysItIsOff(t *testing.T) {
	f, _ := quarantineFixture(t, true)
	code, body := f.get(t, "/quarantines")
	if code != 200 || !strings.Contains(body, `id="quarantine-off"`) || strings.Contains(body, "job_a1") {
		t.Fatalf("quarantine off: %d %s", code, body)
	}
	code, body = f.post(t, "/quarantines/lift", url.Values{"csrf": {token}, "tenant": {"jwt:a"}, "route": {"default"}, "input_hash": {hashA}})
	if code != http.StatusConflict || problemCode(t, body) != "quarantine_off" {
		t.Fatalf("lift with quarantine off: %d %s", code, body)
	}
}

func TestLiftingAQuarantineNeedsTheToken(t *testing.T) {
	f, qs := quarantineFixture(t, false)
	form := url.Values{"tenant": {"jwt:a"}, "route": {"default"}, "input_hash": {hashA}}
	for name, tc := range map[string]struct {
		csrf   string
		header []string
	}{
		"no token":       {"", nil},
		"another token":  {"guess", nil},
		"another origin": {token, []string{"Origin", "http://evil.example"}},
	} {
		v := url.Values{"csrf": {tc.csrf}}
		for k, x := range form {
			v[k] = x
		}
		code, body := f.post(t, "/quarantines/lift", v, tc.header...)
		if code != http.StatusForbidden || problemCode(t, body) != "csrf_refused" {
			t.Errorf("%s: %d %s", name, code, body)
		}
	}
	if _, held, _ := qs.Quarantined(context.Background(), job.QuarantineKey{Tenant: "jwt:a", Model: "default", InputHash: hashA}, now); !held {
		t.Fatal("a refused lift lifted the quarantine")
	}
	if strings.Contains(f.log.String(), "console action") {
		t.Fatalf("a refused lift was logged as an action: %s", f.log)
	}
}

func TestLiftRemovesTheQuarantineAndLogsWhoDidIt(t *testing.T) {
	f, qs := quarantineFixture(t, false)
	ctx := context.Background()
	k := job.QuarantineKey{Tenant: "jwt:a", Model: "default", InputHash: hashA}
	form := url.Values{"csrf": {token}, "tenant": {k.Tenant}, "route": {k.Model}, "input_hash": {k.InputHash}, "filter": {"jwt:a"}}
	req, _ := http.NewRequest(http.MethodPost, f.srv.URL+"/quarantines/lift", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Authorization", "Bearer "+access)
	req.Header.Set("Origin", f.srv.URL)
	resp, err := (&http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/quarantines?done=lifted&tenant=jwt%3Aa" {
		t.Fatalf("lift: %d to %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	if _, held, _ := qs.Quarantined(ctx, k, now); held {
		t.Fatal("the lifted quarantine still holds")
	}
	// The same input of another tenant, and another input of the same
	// tenant, stay quarantined.
	for _, other := range []job.QuarantineKey{{Tenant: "jwt:b", Model: "default", InputHash: hashA}, {Tenant: "jwt:a", Model: "reports", InputHash: hashB}} {
		if _, held, _ := qs.Quarantined(ctx, other, now); !held {
			t.Fatalf("lifting %v lifted %v too", k, other)
		}
	}
	wantAll(t, "action log", f.log.String(), `action="lift quarantine"`, "who=arn:aws:iam::123456789012:user/ops", "tenant=jwt:a",
		"route=default", "input_hash="+hashA, "result=lifted")
	_, body := f.get(t, "/quarantines?done=lifted&tenant=jwt%3Aa")
	wantAll(t, "page after the lift", body, `id="done"`, "Lifted", `id="in-force">1<`, "job_a2")
	// Again: nothing in force; said, not an error.
	f.log.Reset()
	if code, _ := f.post(t, "/quarantines/lift", form); code != http.StatusSeeOther {
		t.Fatalf("second lift: %d", code)
	}
	wantAll(t, "second lift's log", f.log.String(), `action="lift quarantine"`, "result=none")
}

func TestABadLiftFormIsAProblemNeverAServerError(t *testing.T) {
	f, qs := quarantineFixture(t, false)
	long := strings.Repeat("x", 1025)
	for name, form := range map[string]url.Values{
		"nothing":              {},
		"no tenant":            {"route": {"default"}, "input_hash": {hashA}},
		"no route":             {"tenant": {"jwt:a"}, "input_hash": {hashA}},
		"no input hash":        {"tenant": {"jwt:a"}, "route": {"default"}},
		"a blank tenant":       {"tenant": {"  "}, "route": {"default"}, "input_hash": {hashA}},
		"a short hash":         {"tenant": {"jwt:a"}, "route": {"default"}, "input_hash": {"sha256:abc"}},
		"a hash with a #":      {"tenant": {"jwt:a"}, "route": {"default"}, "input_hash": {hashA[:70] + "#"}},
		"a tenant too long":    {"tenant": {long}, "route": {"default"}, "input_hash": {hashA}},
		"a control character":  {"tenant": {"jwt:a\x00"}, "route": {"default"}, "input_hash": {hashA}},
		"not UTF-8":            {"tenant": {"jwt:\xff"}, "route": {"default"}, "input_hash": {hashA}},
		"a bad filter to keep": {"tenant": {"jwt:a"}, "route": {"default"}, "input_hash": {hashA}, "filter": {long}},
	} {
		form.Set("csrf", token)
		code, body := f.post(t, "/quarantines/lift", form)
		if code != http.StatusBadRequest || problemCode(t, body) != "invalid_request" {
			t.Errorf("%s: %d %s", name, code, body)
		}
	}
	if got, _ := qs.List(context.Background(), "", now); len(got) != 3 {
		t.Fatalf("a refused lift changed the quarantines: %d in force", len(got))
	}
	if strings.Contains(f.log.String(), "console action") {
		t.Fatalf("a refused lift was logged as an action: %s", f.log)
	}
	for _, path := range []string{"/quarantines?tenant=" + long, "/quarantines?tenant=%00"} {
		if code, body := f.get(t, path); code != http.StatusBadRequest || problemCode(t, body) != "invalid_request" {
			t.Errorf("%s: %d %s", path[:min(len(path), 40)], code, body)
		}
	}
}
