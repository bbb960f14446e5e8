package api

import (
	"encoding/json"
	"net/http"
	"reflect"
	"testing"
	"time"

	"github.com/aijobs/aijobs/pkg/job"
	"github.com/aijobs/aijobs/pkg/memstore"
	"github.com/aijobs/aijobs/pkg/wire"
)

// TestACreateItsTenantHasNothingLeftForIsRefusedSpendLimit: a hold in
// flight refuses no create, but once what a tenant spent this day leaves
// less than a job's worst case (nothing, here), its create
// is answered 429 spend_limit with Retry-After the seconds to the day's
// end, nothing recorded or sent; an idempotent repeat of an accepted job
// is still a repeat, and a tenant with no limit is not refused. GET
// /spend shows the caller its own balance, and another tenant none.
func TestACreateItsTenantHasNothingLeftForIsRefusedSpendLimit(t *testing.T) {
	e := newEnv(t)
	balance := memstore.NewSpend()
	limit := job.Cents(100)
	e.h.spend, e.h.spendLimits = balance, func(tenant string) []job.PeriodLimit {
		if tenant == "jwt:tenant-other" {
			return nil
		}
		return []job.PeriodLimit{{Period: job.Day, Limit: limit}}
	}
	if resp := e.do(t, createReq(t, "one", simpleBody)); resp.StatusCode != http.StatusAccepted {
		t.Fatalf("a create within the limit: %d %s", resp.StatusCode, resp.Body)
	}
	// A worker holds the day's limit: a hold in flight refuses no create
	// (it is returned as its attempt settles).
	h := job.SpendHold{Tenant: "jwt:tenant-a", Period: job.Day, At: t0, Limit: limit, Entry: "x@1", Amount: limit}
	if ok, err := balance.Hold(t.Context(), h); !ok || err != nil {
		t.Fatal(ok, err)
	}
	if resp := e.do(t, createReq(t, "held", simpleBody)); resp.StatusCode != http.StatusAccepted {
		t.Fatalf("a create while a hold is in flight: %d %s", resp.StatusCode, resp.Body)
	}
	// Its attempt settles having spent it all.
	if err := balance.Settle(t.Context(), job.SpendSettle{SpendHold: h, Cost: limit}); err != nil {
		t.Fatal(err)
	}
	records, sends := e.store.Len(), e.queue.count()
	resp := e.do(t, createReq(t, "two", simpleBody))
	p := decodeProblem(t, resp)
	if resp.StatusCode != http.StatusTooManyRequests || p.Code != wire.CodeSpendLimit || resp.Headers["Retry-After"] != "43200" {
		t.Fatalf("a create with a day's limit held: %d %+v %v", resp.StatusCode, p, resp.Headers)
	}
	if e.store.Len() != records || e.queue.count() != sends {
		t.Fatalf("a refused create wrote %d records and sent %d messages", e.store.Len()-records, e.queue.count()-sends)
	}
	if resp := e.do(t, createReq(t, "one", simpleBody)); resp.StatusCode != http.StatusOK || resp.Headers["Idempotent-Replayed"] != "true" {
		t.Fatalf("the repeat of an accepted job: %d %s", resp.StatusCode, resp.Body)
	}
	if resp := e.do(t, asTenant(createReq(t, "two", simpleBody), "tenant-other")); resp.StatusCode != http.StatusAccepted {
		t.Fatalf("a tenant with no limit: %d %s", resp.StatusCode, resp.Body)
	}

	want := wire.Spend{Periods: []wire.SpendPeriod{{Period: "day", LimitCents: limit, SpentCents: limit, HeldCents: 0,
		RemainingCents: 0, Ends: wire.Time{Time: time.Date(2026, 1, 2, 0, 0, 0, 0, time.UTC)}}}}
	for tenant, want := range map[string]wire.Spend{"tenant-a": want, "tenant-other": {Periods: []wire.SpendPeriod{}}} {
		resp := e.do(t, asTenant(request(t, "GET", "/spend", ""), tenant))
		var got wire.Spend
		if err := json.Unmarshal([]byte(resp.Body), &got); err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("GET /spend as %s: %d %s", tenant, resp.StatusCode, resp.Body)
		}
		for i := range got.Periods {
			got.Periods[i].Ends.Time = got.Periods[i].Ends.UTC()
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("GET /spend as %s: %+v, want %+v", tenant, got, want)
		}
	}
}
