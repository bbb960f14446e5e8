package api

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/aijobs/aijobs/pkg/job"
	"github.com/aijobs/aijobs/pkg/memstore"
	"github.com/aijobs/aijobs/pkg/wire"
)

// itemLimited is the in-memory store with the job store's item size rule:
// pkg/dynamodb refuses, before any write, a record over DynamoDB's 400 KB
// item limit with job.CodeTooLarge (kumo has no such limit, so this is how
// the API's side of it is proven). The input is what grows: the stored
// input is re-encoded JSON.
type itemLimited struct{ *memstore.Store }

func (s itemLimited) Create(ctx context.Context, j job.Job) (job.Job, error) {
	if len(j.Input)+len(j.Metadata) > 400<<10 {
		return job.Job{}, &job.Error{Code: job.CodeTooLarge, Message: "the job record would be larger than the store allows"}
	}
	return s.Store.Create(ctx, j)
}

// TestCreateRecordOverTheItemLimitIs413: Go's JSON encoder writes U+2028
// and U+2029 as \u2028 (3 bytes become 6), so a body under the 256 KiB
// limit makes a stored input over 400 KB. The caller gets 413
// payload_too_large, nothing is written or sent, and nothing is logged as
// an error: it is the caller's input, not a failure of the service.
func TestCreateRecordOverTheItemLimitIs413(t *testing.T) {
	for name, sep := range map[string]string{"U+2028": "\u2028", "U+2029": "\u2029"} {
		t.Run(name, func(t *testing.T) {
			e := newEnv(t)
			e.h = e.handler(itemLimited{e.store})
			body := `{"input":{"messages":[{"role":"user","content":"` + strings.Repeat(sep, 87_000) + `"}]}}`
			if len(body) > MaxBodyBytes {
				t.Fatalf("the body (%d bytes) must be under the body limit", len(body))
			}
			resp := e.do(t, createReq(t, "k", body))
			p := wantProblem(t, resp, http.StatusRequestEntityTooLarge, wire.CodePayloadTooLarge, "")
			if !strings.Contains(p.Detail, "400 KB") {
				t.Errorf("detail %q does not say which limit", p.Detail)
			}
			if e.store.Len() != 0 || e.queue.count() != 0 {
				t.Errorf("records %d, sends %d", e.store.Len(), e.queue.count())
			}
			if logs := e.logs.String(); strings.Contains(logs, `"level":"ERROR"`) {
				t.Errorf("a client's input logged as an error:\n%s", logs)
			}
			// The same body again: the same answer, still nothing written.
			if again := e.do(t, createReq(t, "k", body)); again.StatusCode != http.StatusRequestEntityTooLarge || e.store.Len() != 0 {
				t.Errorf("retry: status %d, records %d", again.StatusCode, e.store.Len())
			}
		})
	}
}
