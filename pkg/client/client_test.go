package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/aijobs/aijobs/pkg/client"
	"github.com/aijobs/aijobs/pkg/client/clienttest"
	"github.com/aijobs/aijobs/pkg/job"
)

func apiError(t *testing.T, err error) *client.Error {
	t.Helper()
	var e *client.Error
	if !errors.As(err, &e) {
		t.Fatalf("error %v (%T) is not a *client.Error", err, err)
	}
	return e
}

func TestSubmitCreatesThenReplays(t *testing.T) {
	srv := clienttest.Start(t)
	c, _ := newClient(t, srv.URL, "tenant-a")
	ctx := context.Background()
	req := client.CreateBody{
		Model: "default", Input: client.UserPrompt("Summarise our Q3 incidents", 256),
		DeadlineSeconds: 900, BudgetCents: job.Cents(50) / 4, MaxAttempts: 3,
		Metadata: json.RawMessage(`{"ticket":"OPS-1"}`),
	}
	v, repeated, err := c.Submit(ctx, "report-1", req)
	if err != nil {
		t.Fatalf("Submit: %v", err)
	}
	if repeated {
		t.Error("a first submit says repeated")
	}
	want := clienttest.ID("tenant-a", "report-1")
	if v.ID != want || v.State != job.Queued || v.RequestKey != "report-1" || v.MaxAttempts != 3 ||
		v.BudgetCents.String() != "12.5" || v.Version != 1 || string(v.Metadata) != `{"ticket":"OPS-1"}` {
		t.Errorf("view = %+v", v)
	}
	if !v.Deadline.Equal(clienttest.T0.Add(900 * time.Second)) {
		t.Errorf("deadline = %s", v.Deadline)
	}
	if srv.Queue.Sends(v.ID) != 1 {
		t.Errorf("sends = %d, want 1", srv.Queue.Sends(v.ID))
	}
	if got := srv.Requests()[0].Header.Get("Idempotency-Key"); got != "report-1" {
		t.Errorf("Idempotency-Key sent = %q", got)
	}

	again, repeated, err := c.Submit(ctx, "report-1", req)
	if err != nil || !repeated || again.ID != v.ID || again.InputHash != v.InputHash {
		t.Fatalf("second Submit = %+v, repeated %v, %v; want the same job again", again, repeated, err)
	}
	if srv.Store.Len() != 1 {
		t.Errorf("store holds %d jobs, want 1", srv.Store.Len())
	}
}

func TestSubmitRefusals(t *testing.T) {
	srv := clienttest.Start(t)
	ctx := context.Background()
	c, _ := newClient(t, srv.URL, "tenant-a")
	if _, _, err := c.Submit(ctx, "k", prompt("one")); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		token  string
		key    string
		req    client.CreateBody
		status int
		code   string
		field  string
	}{
		{"same key, other body", "tenant-a", "k", prompt("two"), 422, "idempotency_key_reused", "Idempotency-Key"},
		{"out of range option", "tenant-a", "k2", client.CreateBody{Input: client.UserPrompt("x", 0), MaxAttempts: 99}, 400, "invalid_request", "max_attempts"},
		{"bad input", "tenant-a", "k3", client.CreateBody{Input: json.RawMessage(`{"messages":[]}`)}, 400, "invalid_request", "input.messages"},
		{"unknown model", "tenant-a", "k4", client.CreateBody{Model: "gpt-9", Input: client.UserPrompt("x", 0)}, 400, "invalid_request", "model"},
		// API Gateway's authorizer answers itself: no problem, no code.
		{"no tenant", "", "k5", prompt("x"), 401, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, sl := newClient(t, srv.URL, tt.token)
			before := len(srv.Requests())
			_, _, err := c.Submit(ctx, tt.key, tt.req)
			e := apiError(t, err)
			if e.Status != tt.status || e.Code != tt.code || e.Field != tt.field {
				t.Errorf("error = %+v, want %d %s field %q", e, tt.status, tt.code, tt.field)
			}
			switch {
			case tt.code == "" && e.Detail != "Unauthorized":
				t.Errorf("API Gateway's message not decoded: %+v", e)
			case tt.code != "" && (e.Title == "" || e.Detail == "" || e.Type != "https://github.com/aijobs/aijobs/blob/main/docs/errors.md#"+tt.code):
				t.Errorf("problem not decoded: %+v", e)
			}
			if n := len(srv.Requests()) - before; n != 1 || len(sl.Waits()) != 0 {
				t.Errorf("a %d was sent %d times with waits %v; 4xx must not be retried", tt.status, n, sl.Waits())
			}
		})
	}
	if srv.Store.Len() != 1 {
		t.Errorf("refused creates wrote records: %d", srv.Store.Len())
	}
}

func TestSubmitRefusesBadKeyLocally(t *testing.T) {
	srv := clienttest.Start(t)
	c, _ := newClient(t, srv.URL, "tenant-a")
	for _, key := range []string{"", "tab\tkey", string(make([]byte, 256))} {
		if _, _, err := c.Submit(context.Background(), key, prompt("x")); err == nil {
			t.Errorf("Submit with key %q succeeded", key)
		}
	}
	if n := len(srv.Requests()); n != 0 {
		t.Errorf("%d requests sent for invalid keys", n)
	}
}

func TestSubmitRetriesEnqueueFailed(t *testing.T) {
	srv := clienttest.Start(t)
	c, sl := newClient(t, srv.URL, "tenant-a")
	srv.Queue.FailNext(2)
	v, repeated, err := c.Submit(context.Background(), "k", prompt("x"))
	if err != nil {
		t.Fatalf("Submit: %v", err)
	}
	// The first try recorded the job; the third found it queued with no
	// attempts and re-sent it: the server answers that as a replay.
	if !repeated || v.State != job.Queued {
		t.Errorf("view %+v repeated %v", v, repeated)
	}
	reqs := srv.Requests()
	if len(reqs) != 3 {
		t.Fatalf("%d requests, want 3", len(reqs))
	}
	for i, r := range reqs {
		if r.Header.Get("Idempotency-Key") != "k" {
			t.Errorf("try %d sent key %q", i+1, r.Header.Get("Idempotency-Key"))
		}
	}
	if got := sl.Waits(); len(got) != 2 || got[0] != 2*time.Second || got[1] != 2*time.Second {
		t.Errorf("waits = %v, want the server's Retry-After (2s) twice", got)
	}
	if srv.Store.Len() != 1 || srv.Queue.Sends(v.ID) != 1 {
		t.Errorf("jobs %d, sends %d; want one job, one message", srv.Store.Len(), srv.Queue.Sends(v.ID))
	}
}

func TestSubmitGivesUpAfterMaxRetries(t *testing.T) {
	srv := clienttest.Start(t)
	c, sl := newClient(t, srv.URL, "tenant-a", func(c *client.Config) { c.MaxRetries = 2 })
	srv.Queue.FailNext(10)
	_, _, err := c.Submit(context.Background(), "k", prompt("x"))
	e := apiError(t, err)
	if e.Status != 503 || e.Code != "enqueue_failed" || e.RetryAfter != 2*time.Second {
		t.Errorf("error = %+v", e)
	}
	if n := len(srv.Requests()); n != 3 || len(sl.Waits()) != 2 {
		t.Errorf("%d tries, %d waits; want 3 and 2", n, len(sl.Waits()))
	}

	none, _ := newClient(t, srv.URL, "tenant-a", func(c *client.Config) { c.MaxRetries = -1 })
	before := len(srv.Requests())
	if _, _, err := none.Submit(context.Background(), "k", prompt("x")); apiError(t, err).Code != "enqueue_failed" {
		t.Errorf("err = %v", err)
	}
	if n := len(srv.Requests()) - before; n != 1 {
		t.Errorf("MaxRetries -1 sent %d tries", n)
	}
}

func TestGetETagAndRetryAfter(t *testing.T) {
	srv := clienttest.Start(t)
	c, _ := newClient(t, srv.URL, "tenant-a")
	ctx := context.Background()
	v, _, err := c.Submit(ctx, "k", prompt("x"))
	if err != nil {
		t.Fatal(err)
	}
	srv.Clock.Advance(2 * time.Minute) // Retry-After grows with age: 120s/4 = 30s

	s, err := c.Get(ctx, v.ID, "")
	if err != nil {
		t.Fatalf("Get: %v", err)
	}
	if s.NotModified || s.View.ID != v.ID || s.ETag != `"1"` || s.RetryAfter != 30*time.Second {
		t.Errorf("snapshot = %+v", s)
	}
	nm, err := c.Get(ctx, v.ID, s.ETag)
	if err != nil {
		t.Fatalf("Get with etag: %v", err)
	}
	if !nm.NotModified || nm.ETag != `"1"` || nm.RetryAfter != 30*time.Second || nm.View.ID != "" {
		t.Errorf("conditional snapshot = %+v, want 304 with the same ETag and Retry-After", nm)
	}
	if got := srv.Requests()[2].Header.Get("If-None-Match"); got != `"1"` {
		t.Errorf("If-None-Match sent = %q", got)
	}

	srv.Claim(t, v.ID)
	changed, err := c.Get(ctx, v.ID, s.ETag)
	if err != nil || changed.NotModified || changed.View.State != job.Running || changed.ETag != `"2"` {
		t.Fatalf("after a claim: %+v, %v", changed, err)
	}
	srv.Succeed(t, v.ID, job.Cents(1)/4, clienttest.Result("done"))
	done, err := c.Get(ctx, v.ID, changed.ETag)
	if err != nil || done.View.State != job.Succeeded || done.RetryAfter != 0 {
		t.Fatalf("terminal: %+v, %v; want no Retry-After", done, err)
	}
	if done.View.CostCents.String() != "0.25" || string(done.View.Result) != clienttest.Result("done") || done.View.Class() != "" {
		t.Errorf("terminal view = %+v", done.View)
	}
}

func TestTenantsAreIsolated(t *testing.T) {
	srv := clienttest.Start(t)
	a, _ := newClient(t, srv.URL, "tenant-a")
	b, _ := newClient(t, srv.URL, "tenant-b")
	ctx := context.Background()
	v, _, err := a.Submit(ctx, "k", prompt("x"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = b.Get(ctx, v.ID, "")
	if e := apiError(t, err); e.Status != 404 || e.Code != "not_found" {
		t.Errorf("other tenant's Get = %+v", e)
	}
	_, err = b.Cancel(ctx, v.ID)
	if e := apiError(t, err); e.Status != 404 || e.Code != "not_found" {
		t.Errorf("other tenant's Cancel = %+v", e)
	}
	unknown := clienttest.ID("tenant-a", "never")
	_, err = a.Get(ctx, unknown, "")
	if e := apiError(t, err); e.Status != 404 || e.Code != "not_found" {
		t.Errorf("unknown id = %+v", e)
	}
	_, err = a.Get(ctx, "not-an-id", "")
	if e := apiError(t, err); e.Status != 400 || e.Code != "invalid_request" || e.Field != "id" {
		t.Errorf("malformed id = %+v", e)
	}
	if _, err := a.Get(ctx, "", ""); err == nil {
		t.Error("Get with no id succeeded")
	}
	// Same key, other tenant: another job.
	w, repeated, err := b.Submit(ctx, "k", prompt("y"))
	if err != nil || repeated || w.ID == v.ID {
		t.Errorf("tenant-b's submit = %+v, %v, %v", w, repeated, err)
	}
}

func TestCancel(t *testing.T) {
	srv := clienttest.Start(t)
	c, _ := newClient(t, srv.URL, "tenant-a")
	ctx := context.Background()
	v, _, err := c.Submit(ctx, "k", prompt("x"))
	if err != nil {
		t.Fatal(err)
	}
	srv.Claim(t, v.ID)
	got, err := c.Cancel(ctx, v.ID)
	if err != nil || got.State != job.Abandoned || got.Class() != job.Cancelled {
		t.Fatalf("Cancel = %+v, %v", got, err)
	}
	again, err := c.Cancel(ctx, v.ID)
	if err != nil || again.State != job.Abandoned || again.Version != got.Version {
		t.Fatalf("second Cancel = %+v, %v; want the same view (idempotent)", again, err)
	}

	done, _, _ := c.Submit(ctx, "k2", prompt("y"))
	srv.Claim(t, done.ID)
	srv.Succeed(t, done.ID, 0, clienttest.Result("ok"))
	_, err = c.Cancel(ctx, done.ID)
	if e := apiError(t, err); e.Status != http.StatusConflict || e.Code != "already_finished" {
		t.Errorf("cancel of a succeeded job = %+v", e)
	}
}

func TestWaitPollsUntilTerminal(t *testing.T) {
	srv := clienttest.Start(t)
	c, sl := newClient(t, srv.URL, "tenant-a")
	ctx := context.Background()
	v, _, err := c.Submit(ctx, "k", prompt("x"))
	if err != nil {
		t.Fatal(err)
	}
	sl.steps = []func(){
		func() { srv.Claim(t, v.ID) },
		func() {}, // nothing changes: a 304
		func() { srv.Progress(t, v.ID, 0.5) },
		func() { srv.Succeed(t, v.ID, job.Cents(3), clienttest.Result("hi")) },
	}
	var seen []string
	final, err := c.Wait(ctx, v.ID, func(v client.View) {
		seen = append(seen, string(v.State)+"@"+jsonNumber(v.Progress))
	})
	if err != nil {
		t.Fatalf("Wait: %v", err)
	}
	if final.State != job.Succeeded || final.CostCents != job.Cents(3) {
		t.Errorf("final = %+v", final)
	}
	want := []string{"queued@0", "running@0", "running@0.5", "succeeded@1"}
	if len(seen) != len(want) {
		t.Fatalf("callbacks %v, want %v", seen, want)
	}
	for i := range want {
		if seen[i] != want[i] {
			t.Fatalf("callbacks %v, want %v", seen, want)
		}
	}
	// 1s after each change (PollMin, the server's Retry-After is 1s for
	// a young job), doubled after the unchanged poll.
	wantWaits := []time.Duration{time.Second, time.Second, 2 * time.Second, time.Second}
	if got := sl.Waits(); !slices.Equal(got, wantWaits) {
		t.Errorf("waits = %v, want %v", got, wantWaits)
	}
	reqs := srv.Requests()[1:] // after the submit
	if reqs[0].Header.Get("If-None-Match") != "" {
		t.Error("the first poll sent If-None-Match")
	}
	for _, r := range reqs[1:] {
		if r.Header.Get("If-None-Match") == "" {
			t.Errorf("poll %s sent no If-None-Match", r.Path)
		}
	}
}

func TestWaitHonoursRetryAfterAndCapsIt(t *testing.T) {
	srv := clienttest.Start(t)
	ctx := context.Background()
	for _, tt := range []struct {
		name    string
		pollMax time.Duration
		want    time.Duration
	}{
		{"server's Retry-After over the backoff", 0, 30 * time.Second},
		{"capped by PollMax", 10 * time.Second, 10 * time.Second},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c, sl := newClient(t, srv.URL, "tenant-a", func(c *client.Config) { c.PollMax = tt.pollMax })
			v, _, err := c.Submit(ctx, "k-"+tt.want.String(), prompt("x"))
			if err != nil {
				t.Fatal(err)
			}
			srv.Clock.Advance(10 * time.Minute) // Retry-After: 30 s
			sl.steps = []func(){func() { srv.Claim(t, v.ID); srv.End(t, v.ID, 0, job.ContentFiltered) }}
			final, err := c.Wait(ctx, v.ID, nil)
			if err != nil || final.State != job.Failed || final.Class() != job.ContentFiltered {
				t.Fatalf("Wait = %+v, %v", final, err)
			}
			if got := sl.Waits(); len(got) != 1 || got[0] != tt.want {
				t.Errorf("waits = %v, want [%s]", got, tt.want)
			}
		})
	}
}

func TestWaitStopsWithTheContext(t *testing.T) {
	srv := clienttest.Start(t)
	c, sl := newClient(t, srv.URL, "tenant-a")
	v, _, err := c.Submit(context.Background(), "k", prompt("x"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	sl.steps = []func(){func() {}, cancel}
	last, err := c.Wait(ctx, v.ID, nil)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Wait error = %v, want context.Canceled", err)
	}
	if last.ID != v.ID || last.State != job.Queued {
		t.Errorf("Wait's last view = %+v", last)
	}
}

func jsonNumber(f float64) string {
	b, _ := json.Marshal(f)
	return string(b)
}
