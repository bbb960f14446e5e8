package api

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/aijobs/aijobs/pkg/job"
	"github.com/aijobs/aijobs/pkg/wire"
)

func listReq(t testing.TB, query string) events.APIGatewayV2HTTPRequest {
	ev := request(t, http.MethodGet, "/jobs", "")
	ev.RawQueryString = query
	return ev
}

func decodeList(t *testing.T, resp events.APIGatewayV2HTTPResponse) wire.Page {
	t.Helper()
	if resp.StatusCode != http.StatusOK || resp.Headers["Content-Type"] != "application/json" || resp.Headers["Cache-Control"] != "no-store" {
		t.Fatalf("status %d headers %v body %s", resp.StatusCode, resp.Headers, resp.Body)
	}
	var b wire.Page
	if err := json.Unmarshal([]byte(resp.Body), &b); err != nil {
		t.Fatal(err)
	}
	if b.NextCursor == "" && !strings.Contains(resp.Body, `"next_cursor":null`) {
		t.Fatalf("a last page whose cursor is not null: %s", resp.Body)
	}
	// A client reads this same type: written again, it is what was sent.
	if back, err := json.Marshal(b); err != nil || string(back) != resp.Body {
		t.Fatalf("the page read back differs (%v)\nsent %s\nread %s", err, resp.Body, back)
	}
	return b
}

func TestListPagesTheCallersJobsNewestFirst(t *testing.T) {
	e := newEnv(t)
	var ids []string
	for i := range 5 {
		ids = append(ids, e.mustCreate(t, fmt.Sprint("k", i)))
		e.clock.Advance(time.Second)
	}
	e.succeed(t, ids[1])
	other := e.do(t, asTenant(createReq(t, "theirs", simpleBody), "tenant-b"))
	if other.StatusCode != 202 {
		t.Fatal(other.Body)
	}

	var got []string
	cursor := ""
	for pages := 0; ; pages++ {
		q := "limit=2"
		if cursor != "" {
			q += "&cursor=" + cursor
		}
		b := decodeList(t, e.do(t, listReq(t, q)))
		if len(b.Jobs) > 2 || pages > 5 {
			t.Fatalf("page %d: %d jobs", pages, len(b.Jobs))
		}
		for _, s := range b.Jobs {
			got = append(got, s.ID)
		}
		if b.NextCursor == "" {
			break
		}
		cursor = b.NextCursor
	}
	want := []string{ids[4], ids[3], ids[2], ids[1], ids[0]}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("ids %v, want %v (newest first, the caller's only)", got, want)
	}

	// A cursor from a page without since, reused with a since after it:
	// the caller's mistake, a 400 naming the cursor (never a 503).
	first := decodeList(t, e.do(t, listReq(t, "limit=4")))
	if first.NextCursor == "" {
		t.Fatal("no second page")
	}
	wantProblem(t, e.do(t, listReq(t, "since=2026-01-01T12:00:03Z&cursor="+first.NextCursor)), http.StatusBadRequest, wire.CodeInvalidRequest, "cursor")

	b := decodeList(t, e.do(t, listReq(t, "state=succeeded")))
	if len(b.Jobs) != 1 || b.Jobs[0].ID != ids[1] || b.Jobs[0].CostCents != 420_000_000 || b.Jobs[0].ResultModel != "fake-1" ||
		b.Jobs[0].ErrorClass != nil || !b.Jobs[0].CreatedAt.Equal(t0.Add(time.Second)) || b.NextCursor != "" {
		t.Fatalf("succeeded only: %s", e.do(t, listReq(t, "state=succeeded")).Body)
	}
	b = decodeList(t, e.do(t, listReq(t, "since=2026-01-01T12:00:03Z")))
	if len(b.Jobs) != 2 || b.Jobs[0].ID != ids[4] || b.Jobs[1].ID != ids[3] {
		t.Fatalf("since: %+v", b.Jobs)
	}
	if b := decodeList(t, e.do(t, asTenant(listReq(t, "error_class=auth"), "tenant-c"))); len(b.Jobs) != 0 || b.NextCursor != "" {
		t.Fatalf("an empty list: %+v", b)
	}
	if body := e.do(t, asTenant(listReq(t, ""), "tenant-c")).Body; body != `{"jobs":[],"next_cursor":null}` {
		t.Fatalf("empty list body %s", body)
	}
}

func TestListRefusesBadQueries(t *testing.T) {
	for _, c := range []struct{ query, field string }{
		{"state=done", "state"},
		{"error_class=oops", "error_class"},
		{"since=yesterday", "since"},
		{"limit=0", "limit"},
		{"limit=101", "limit"},
		{"limit=ten", "limit"},
		{"cursor=abc", "cursor"},
		{"page=2", "page"},
		{"state=queued&state=running", "state"},
		{"%zz", ""},
	} {
		t.Run(c.query, func(t *testing.T) {
			e := newEnv(t)
			wantProblem(t, e.do(t, listReq(t, c.query)), http.StatusBadRequest, wire.CodeInvalidRequest, c.field)
		})
	}
	e := newEnv(t)
	ev := listReq(t, "")
	ev.RequestContext.Authorizer = nil
	wantProblem(t, e.do(t, ev), http.StatusUnauthorized, wire.CodeUnauthorized, "")
}

func TestListStoreFailureIsA503WithoutDetail(t *testing.T) {
	e := newEnv(t)
	h := e.handler(failingStore(&job.Error{Code: job.CodeUnavailable, Message: "dynamodb said ProvisionedThroughputExceeded"}))
	ev := listReq(t, "limit=5")
	resp, _ := h.Handle(t.Context(), ev)
	checkContract(t, ev, resp)
	p := wantProblem(t, resp, http.StatusServiceUnavailable, wire.CodeUnavailable, "")
	if strings.Contains(p.Detail, "dynamodb") {
		t.Fatalf("vendor text leaked: %q", p.Detail)
	}
}
