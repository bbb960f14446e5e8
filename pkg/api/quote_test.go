package api

import (
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"testing"
	"time"

	"github.com/aijobs/aijobs/pkg/job"
	"github.com/aijobs/aijobs/pkg/memstore"
	"github.com/aijobs/aijobs/pkg/wire"
)

// quoteBody's prompt ceiling is 11 tokens ((5+1)/2 + 8 for its message)
// and its output cap 100.
const quoteBody = `{"input":{"messages":[{"role":"user","content":"hello"}],"max_tokens":100}%s}`

// quoteEnv is an API over a two-rung route, the first with a flex lane at
// half its standard price, and a day's spend limit of 1000 nanocents.
func quoteEnv(t *testing.T) (*env, *memstore.Spend) {
	e := newEnv(t)
	std := job.Rung{Provider: "p", Model: "m", Price: job.Price{InputPerToken: 4, OutputPerToken: 8}, Timeout: time.Minute}
	flex := std
	flex.Lane, flex.Base, flex.Price = job.Flex, std.Price, job.Price{InputPerToken: 2, OutputPerToken: 4}
	std.Lanes = []job.Rung{flex}
	dear := job.Rung{Provider: "q", Model: "big", Price: job.Price{InputPerToken: 10, OutputPerToken: 20}, Timeout: time.Minute}
	e.h = e.withConfig(map[string]job.Route{"default": {Rungs: []job.Rung{std, dear}}}, nil)
	balance := memstore.NewSpend()
	e.h.spend, e.h.spendLimits = balance, func(string) []job.PeriodLimit { return []job.PeriodLimit{{Period: job.Day, Limit: 1000}} }
	return e, balance
}

func decodeQuote(t *testing.T, e *env, extra string) wire.Quote {
	t.Helper()
	resp := e.do(t, request(t, "POST", "/quotes", fmt.Sprintf(quoteBody, extra)))
	var q wire.Quote
	if err := json.Unmarshal([]byte(resp.Body), &q); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("POST /quotes %s: %d %s", extra, resp.StatusCode, resp.Body)
	}
	for i := range q.Spend {
		q.Spend[i].Ends.Time = q.Spend[i].Ends.UTC()
	}
	return q
}

// A quote answers the worst case the first attempt would hold (flex's,
// the cheapest lane of the first rung), the dearest call the route may
// make, each rung and lane the job allows with its worst and expected
// cost, and whether the day's balance covers the worst case; it records
// nothing, sends nothing and holds nothing. Held spend counts against
// it, and lanes narrow it.
func TestAQuoteAnswersTheWorstCasesAndTheBalanceWithoutRecording(t *testing.T) {
	e, balance := quoteEnv(t)
	end := wire.Time{Time: time.Date(2026, 1, 2, 0, 0, 0, 0, time.UTC)}
	want := wire.Quote{Model: "default", WorstCaseCents: 422, MaxWorstCaseCents: 2110, ExpectedCents: 212,
		BudgetCents: e.h.limits.DefaultBudget, BudgetCoversMax: true, Covered: true,
		Offers: []wire.QuoteOffer{
			{Rung: 0, Provider: "p", ProviderModel: "m", Lane: "standard", WorstCaseCents: 844, ExpectedCents: 424},
			{Rung: 0, Provider: "p", ProviderModel: "m", Lane: "flex", WorstCaseCents: 422, ExpectedCents: 212},
			{Rung: 1, Provider: "q", ProviderModel: "big", Lane: "standard", WorstCaseCents: 2110, ExpectedCents: 1060},
		},
		Spend: []wire.QuoteSpend{{SpendPeriod: wire.SpendPeriod{Period: "day", LimitCents: 1000, RemainingCents: 1000, Ends: end}, Covers: true}},
	}
	if got := decodeQuote(t, e, ""); !reflect.DeepEqual(got, want) {
		t.Errorf("quote:\n got %+v\nwant %+v", got, want)
	}
	if e.store.Len() != 0 || e.queue.count() != 0 {
		t.Fatalf("a quote wrote %d records and sent %d messages", e.store.Len(), e.queue.count())
	}
	if b, err := balance.Balance(t.Context(), job.SpendHold{Tenant: "jwt:tenant-a", Period: job.Day, At: t0, Limit: 1000}); err != nil || b != (job.SpendBalance{}) {
		t.Fatalf("a quote moved the balance: %+v %v", b, err)
	}

	// An attempt in flight holds 600: 400 remain, under flex's 422.
	h := job.SpendHold{Tenant: "jwt:tenant-a", Period: job.Day, At: t0, Limit: 1000, Entry: "x@1", Amount: 600}
	if ok, err := balance.Hold(t.Context(), h); !ok || err != nil {
		t.Fatal(ok, err)
	}
	got := decodeQuote(t, e, `,"lanes":["standard"],"budget_cents":0.000001`)
	if got.WorstCaseCents != 844 || got.MaxWorstCaseCents != 2110 || got.Covered || len(got.Offers) != 2 || got.BudgetCoversMax ||
		got.Spend[0].HeldCents != 600 || got.Spend[0].RemainingCents != 400 || got.Spend[0].Covers {
		t.Errorf("a quote held to standard, a budget of 1000 nanocents, 600 held: %+v", got)
	}
}

// A quote refuses what a create refuses, with the same problem, and
// needs no Idempotency-Key.
func TestAQuoteRefusesWhatACreateRefuses(t *testing.T) {
	e, _ := quoteEnv(t)
	for name, body := range map[string]string{
		"no input":       `{"model":"default"}`,
		"unknown model":  `{"model":"nope","input":{"messages":[{"role":"user","content":"hello"}]}}`,
		"budget too low": fmt.Sprintf(quoteBody, `,"budget_cents":0.0000001`),
		"unknown lane":   fmt.Sprintf(quoteBody, `,"lanes":["slow"]`),
		"not an object":  `[]`,
	} {
		quote := e.do(t, request(t, "POST", "/quotes", body))
		create := e.do(t, createReq(t, "k", body))
		if quote.StatusCode != http.StatusBadRequest || quote.StatusCode != create.StatusCode {
			t.Errorf("%s: quote %d, create %d", name, quote.StatusCode, create.StatusCode)
			continue
		}
		if q, c := decodeProblem(t, quote), decodeProblem(t, create); q.Code != c.Code || q.Field != c.Field || q.Detail != c.Detail {
			t.Errorf("%s: quote %+v, create %+v", name, q, c)
		}
	}
	if e.store.Len() != 0 {
		t.Fatalf("refused quotes and creates wrote %d records", e.store.Len())
	}
}
