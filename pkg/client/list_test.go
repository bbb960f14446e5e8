package client_test

import (
	"context"
	"encoding/json"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/aijobs/aijobs/pkg/client"
	"github.com/aijobs/aijobs/pkg/client/clienttest"
	"github.com/aijobs/aijobs/pkg/job"
)

// List reads the real handler's page (pkg/api over the in-memory store):
// summaries as the API sends them, replays included, and a cursor that
// pages to the end.
func TestListSendsTheQueryAndReadsThePage(t *testing.T) {
	srv := clienttest.Start(t)
	c, _ := newClient(t, srv.URL, "ops")
	ctx := context.Background()
	var failed []string
	for _, key := range []string{"k1", "k2"} {
		v, _, err := c.Submit(ctx, key, prompt("x"))
		if err != nil {
			t.Fatal(err)
		}
		srv.Clock.Advance(time.Second)
		srv.Claim(t, v.ID)
		srv.End(t, v.ID, 1, job.RateLimited)
		failed = append(failed, v.ID)
	}
	if _, _, err := c.Submit(ctx, "k3", prompt("x")); err != nil { // queued: not listed below
		t.Fatal(err)
	}
	// An operator replay of the first, failed again: the summary counts it.
	now := srv.Clock.Now()
	if _, err := srv.Store.Replay(ctx, job.Replay{ID: failed[0], Now: now, Attempts: 1, Deadline: now.Add(time.Hour), ExpiresAt: now.Add(time.Hour)}); err != nil {
		t.Fatalf("replay: %v", err)
	}
	srv.Claim(t, failed[0])
	srv.End(t, failed[0], 1, job.RateLimited)

	since := time.Date(2026, 12, 1, 9, 30, 15, 999_000_000, time.FixedZone("CET", 3600))
	q := client.ListQuery{State: job.Failed, ErrorClass: job.RateLimited, Since: since, Limit: 1}
	before := len(srv.Requests())
	p, err := c.List(ctx, q)
	if err != nil {
		t.Fatalf("List: %v", err)
	}
	sent := srv.Requests()[before]
	want := url.Values{"state": {"failed"}, "error_class": {"rate_limited"}, "since": {"2026-12-01T08:30:15Z"}, "limit": {"1"}}
	if got, _ := url.ParseQuery(sent.RawQuery); got.Encode() != want.Encode() || sent.Path != "/jobs" {
		t.Errorf("sent %s?%s, want /jobs?%s", sent.Path, sent.RawQuery, want.Encode())
	}
	if len(p.Jobs) != 1 || p.NextCursor == "" {
		t.Fatalf("first page = %+v, want one job and a cursor", p)
	}
	// Newest first: the second job was created a second after the first.
	s := p.Jobs[0]
	if s.ID != failed[1] || s.State != job.Failed || s.Class() != job.RateLimited || s.CostCents != 1 ||
		s.BudgetCents != job.Cents(50) || s.Replays != 0 || !s.CreatedAt.Equal(clienttest.T0.Add(time.Second)) {
		t.Errorf("summary = %+v", s)
	}

	q.Cursor = p.NextCursor
	second, err := c.List(ctx, q)
	if err != nil {
		t.Fatalf("List with cursor: %v", err)
	}
	if got := srv.Requests()[before+1].RawQuery; !strings.Contains(got, "cursor="+url.QueryEscape(p.NextCursor)) {
		t.Errorf("cursor not sent: %s", got)
	}
	if len(second.Jobs) != 1 || second.Jobs[0].ID != failed[0] || second.Jobs[0].Replays != 1 || second.Jobs[0].CostCents != 2 {
		t.Fatalf("second page = %+v, want the replayed job with replays 1 and both attempts' cost", second)
	}
	// Written again, a summary is what the API sent: no zero updated_at or
	// version the API never sent.
	out, _ := json.Marshal(second.Jobs[0])
	if strings.Contains(string(out), "updated_at") || strings.Contains(string(out), "version") || !strings.Contains(string(out), `"replays":1`) {
		t.Errorf("summary JSON = %s", out)
	}

	none, err := c.List(ctx, client.ListQuery{State: job.Succeeded})
	if err != nil {
		t.Fatalf("List of nothing: %v", err)
	}
	if out, _ := json.Marshal(none); string(out) != `{"jobs":[],"next_cursor":null}` {
		t.Errorf("empty page JSON = %s", out)
	}

	before = len(srv.Requests())
	if _, err := c.List(ctx, client.ListQuery{}); err != nil || srv.Requests()[before].RawQuery != "" {
		t.Errorf("an empty query sent %q (%v)", srv.Requests()[before].RawQuery, err)
	}
	before = len(srv.Requests())
	if _, err := c.List(ctx, client.ListQuery{Limit: -1}); err == nil || len(srv.Requests()) != before {
		t.Error("a negative limit was sent")
	}
}

func TestListProblem(t *testing.T) {
	srv := clienttest.Start(t)
	c, _ := newClient(t, srv.URL, "ops")
	_, err := c.List(context.Background(), client.ListQuery{State: "done"})
	if e := apiError(t, err); e.Status != 400 || e.Code != "invalid_request" || e.Field != "state" {
		t.Errorf("error = %+v", e)
	}
}
