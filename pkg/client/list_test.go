package client_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"
	"time"

	"github.com/aijobs/aijobs/pkg/client"
	"github.com/aijobs/aijobs/pkg/job"
)

// The GET /jobs route is being added to the server separately; this serves
// its agreed shape: {"jobs":[<view>...],"next_cursor":"<opaque>"|null}.
func TestListSendsTheQueryAndReadsThePage(t *testing.T) {
	var got []url.Values
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet || r.URL.Path != "/jobs" || r.Header.Get("Authorization") != "Bearer ops" {
			http.Error(w, "unexpected "+r.Method+" "+r.URL.Path, http.StatusTeapot)
			return
		}
		got = append(got, r.URL.Query())
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Query().Get("cursor") == "" {
			_, _ = io.WriteString(w, `{"jobs":[
			  {"id":"job_aaaaaaaaaaaaaaaaaaaaaaaaaa","state":"failed","request_key":"k1","input_hash":"sha256:ab","model":"default",
			   "attempts":4,"max_attempts":4,"progress":0,"cost_cents":0.000000001,"budget_cents":50,"error_class":"rate_limited",
			   "result":null,"created_at":"2026-12-02T10:00:00.000Z","updated_at":"2026-12-02T10:05:00.123Z","deadline":"2026-12-02T10:15:00.000Z","version":9}],
			  "next_cursor":"opaque+/=="}`)
			return
		}
		_, _ = io.WriteString(w, `{"jobs":[],"next_cursor":null}`)
	}))
	defer srv.Close()
	c, _ := newClient(t, srv.URL, "ops")
	since := time.Date(2026, 12, 1, 9, 30, 15, 999_000_000, time.FixedZone("CET", 3600))
	q := client.ListQuery{State: job.Failed, ErrorClass: job.RateLimited, Since: since, Limit: 50}
	p, err := c.List(context.Background(), q)
	if err != nil {
		t.Fatalf("List: %v", err)
	}
	want := url.Values{"state": {"failed"}, "error_class": {"rate_limited"}, "since": {"2026-12-01T08:30:15Z"}, "limit": {"50"}}
	if len(got) != 1 || got[0].Encode() != want.Encode() {
		t.Errorf("query = %v, want %v", got, want)
	}
	if len(p.Jobs) != 1 || p.NextCursor != "opaque+/==" {
		t.Fatalf("page = %+v", p)
	}
	j := p.Jobs[0]
	if j.State != job.Failed || j.Class() != job.RateLimited || j.CostCents != 1 || j.BudgetCents != job.Cents(50) ||
		j.UpdatedAt.Nanosecond() != 123_000_000 || j.Version != 9 {
		t.Errorf("job = %+v", j)
	}

	q.Cursor = p.NextCursor
	last, err := c.List(context.Background(), q)
	if err != nil {
		t.Fatalf("List with cursor: %v", err)
	}
	if got[1].Get("cursor") != "opaque+/==" {
		t.Errorf("cursor sent = %q", got[1].Get("cursor"))
	}
	if len(last.Jobs) != 0 || last.NextCursor != "" {
		t.Errorf("last page = %+v", last)
	}
	out, _ := json.Marshal(last)
	if string(out) != `{"jobs":[],"next_cursor":null}` {
		t.Errorf("page JSON = %s", out)
	}

	if _, err := c.List(context.Background(), client.ListQuery{}); err != nil || got[2].Encode() != "" {
		t.Errorf("an empty query sent %v (%v)", got[2], err)
	}
	if _, err := c.List(context.Background(), client.ListQuery{Limit: -1}); err == nil {
		t.Error("a negative limit was sent")
	}
}

func TestListProblem(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/problem+json")
		w.WriteHeader(http.StatusBadRequest)
		_, _ = io.WriteString(w, `{"type":"https://github.com/aijobs/aijobs/blob/main/docs/errors.md#invalid_request","title":"Invalid request","status":400,"detail":"state must be one of queued, running, succeeded, failed, abandoned","code":"invalid_request","field":"state"}`)
	}))
	defer srv.Close()
	c, _ := newClient(t, srv.URL, "ops")
	_, err := c.List(context.Background(), client.ListQuery{State: "done"})
	if e := apiError(t, err); e.Code != "invalid_request" || e.Field != "state" {
		t.Errorf("error = %+v", e)
	}
}
