package client_test

import (
	"context"
	"testing"

	"github.com/aijobs/aijobs/pkg/client/clienttest"
	"github.com/aijobs/aijobs/pkg/job"
)

// A quote needs no key and records nothing; it shows the caller's day
// balance and says it no longer covers a job once the limit is spent; a
// body a create refuses is refused with the same code and field.
func TestQuoteShowsTheBalanceAndRecordsNothing(t *testing.T) {
	srv := clienttest.Start(t)
	ctx := context.Background()
	c, _ := newClient(t, srv.URL, "spender")
	q, err := c.Quote(ctx, prompt("one"))
	if err != nil || !q.Covered || len(q.Spend) != 1 || q.Spend[0].LimitCents != clienttest.SpenderLimit || !q.Spend[0].Covers {
		t.Fatalf("Quote = %+v, %v", q, err)
	}
	if n := srv.Store.Len(); n != 0 {
		t.Fatalf("a quote recorded %d jobs", n)
	}
	h := job.SpendHold{Tenant: clienttest.Tenant("spender"), Period: job.Day, At: clienttest.T0, Limit: clienttest.SpenderLimit, Entry: "x@1", Amount: clienttest.SpenderLimit}
	if ok, err := srv.Spend.Hold(ctx, h); !ok || err != nil {
		t.Fatal(ok, err)
	}
	if q, err := c.Quote(ctx, prompt("one")); err != nil || q.Covered || q.Spend[0].Covers || q.Spend[0].RemainingCents != 0 {
		t.Fatalf("Quote with the day held = %+v, %v", q, err)
	}
	bad := prompt("one")
	bad.Model = "no-such-model"
	_, err = c.Quote(ctx, bad)
	if e := apiError(t, err); e.Status != 400 || e.Code != "invalid_request" || e.Field != "model" {
		t.Fatalf("a quote of an unknown model: %+v", e)
	}
}
