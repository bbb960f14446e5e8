package client_test

import (
	"context"
	"testing"
	"time"

	"github.com/aijobs/aijobs/pkg/client/clienttest"
	"github.com/aijobs/aijobs/pkg/job"
)

// A tenant reads its own spend; once its day's limit is spent, a submit
// fails spend_limit with the seconds to the day's end, sent once, not
// retried.
func TestSpendAndASubmitOverTheLimit(t *testing.T) {
	srv := clienttest.Start(t)
	ctx := context.Background()
	c, sl := newClient(t, srv.URL, "spender")
	s, err := c.Spend(ctx)
	if err != nil || len(s.Periods) != 1 || s.Periods[0].Period != "day" || s.Periods[0].LimitCents != clienttest.SpenderLimit ||
		s.Periods[0].RemainingCents != clienttest.SpenderLimit || !s.Periods[0].Ends.Equal(time.Date(2026, 12, 3, 0, 0, 0, 0, time.UTC)) {
		t.Fatalf("Spend = %+v, %v", s, err)
	}
	h := job.SpendHold{Tenant: clienttest.Tenant("spender"), Period: job.Day, At: clienttest.T0, Limit: clienttest.SpenderLimit, Entry: "x@1", Amount: clienttest.SpenderLimit}
	if ok, err := srv.Spend.Hold(ctx, h); !ok || err != nil {
		t.Fatal(ok, err)
	}
	if err := srv.Spend.Settle(ctx, job.SpendSettle{SpendHold: h, Cost: clienttest.SpenderLimit}); err != nil {
		t.Fatal(err)
	}
	before := len(srv.Requests())
	_, _, err = c.Submit(ctx, "k", prompt("one"))
	e := apiError(t, err)
	if e.Status != 429 || e.Code != "spend_limit" || e.RetryAfter != 14*time.Hour || e.Temporary() {
		t.Fatalf("a submit over the limit: %+v", e)
	}
	if n := len(srv.Requests()) - before; n != 1 || len(sl.Waits()) != 0 {
		t.Fatalf("a spend_limit was sent %d times with waits %v", n, sl.Waits())
	}
	if s, err := c.Spend(ctx); err != nil || s.Periods[0].SpentCents != clienttest.SpenderLimit || s.Periods[0].RemainingCents != 0 {
		t.Fatalf("Spend once spent = %+v, %v", s, err)
	}
	other, _ := newClient(t, srv.URL, "tenant-a")
	if s, err := other.Spend(ctx); err != nil || len(s.Periods) != 0 {
		t.Fatalf("a tenant with no limit: %+v, %v", s, err)
	}
}
