package chaos

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/aijobs/aijobs/pkg/config"
	"github.com/aijobs/aijobs/pkg/job"
)

// Invariant 7 holds each limited tenant's period to its limit on the
// records and on the bill apart: a tenant whose records pass the limit
// fails, one whose bill passes it fails too, an unlimited tenant is never
// checked, and the counts say what the jobs did.
func TestInvariant7HoldsEachLimitedTenantToItsLimit(t *testing.T) {
	c, err := config.Load(lookup(env("http://127.0.0.1:1", "p", "http://127.0.0.1:2", "api")))
	if err != nil {
		t.Fatal(err)
	}
	h := &harness{cfg: c}
	now := time.Now().UTC()
	plain := c.Routes[lanedRoute].Rungs[0]
	cent := job.Nanocents(1e9)
	fact := func(tenant string, cost job.Nanocents, state job.State, class job.ErrorClass, output int64) jobFacts {
		r := &jobRun{plan: JobPlan{Tenant: tenant}, id: tenant + "-" + cost.String()}
		f := jobFacts{run: r, has: true, rec: job.Job{Tenant: "jwt:" + tenant, Cost: cost, State: state, ErrorClass: class, CreatedAt: now}}
		if output > 0 {
			f.gens = []Generation{{NS: "aj", Model: plain.Model, Output: output, Start: now, Lane: job.Standard, Served: job.Standard}}
		}
		return f
	}
	// t0's day limit is a cent: 0.6 + 0.3 on the records is within it.
	facts := []jobFacts{
		fact("t0", 6*cent/10, job.Succeeded, "", 1),
		fact("t0", 3*cent/10, job.Succeeded, "", 1),
		fact("t0", 0, job.Abandoned, job.SpendLimit, 0),
		fact("t3", 100*cent, job.Succeeded, "", 1), // no limit
	}
	logs := spendLogs{deferred: map[string]bool{facts[2].run.id: true}, local: map[string]bool{facts[1].run.id: true}}
	inv, spend := h.checkSpend(facts, logs)
	if inv.Failed != 0 || inv.Checked != 1 || len(spend) != 1 { // t0's day alone: t3 has no limit
		t.Fatalf("within the limit: %+v %+v", inv, spend)
	}
	s := spend[0]
	if s.Tenant != "jwt:t0" || s.Period != job.Day || s.Limit != cent || s.Recorded != 9*cent/10 || s.Succeeded != 2 || s.Abandoned != 1 || s.Deferred != 1 ||
		s.Local != 1 || s.LocalRecorded != 3*cent/10 {
		t.Fatalf("t0's day: %+v", s)
	}
	facts = append(facts, fact("t0", 2*cent/10, job.Succeeded, "", 0))
	if inv, _ = h.checkSpend(facts, spendLogs{}); inv.Failed != 1 {
		t.Fatalf("records over the limit passed: %+v", inv)
	}
	// The bill alone over the limit: 1.7M output tokens at 600 cents a
	// million is about 10 cents, on a record of nothing.
	if inv, _ = h.checkSpend([]jobFacts{fact("t0", 0, job.Succeeded, "", 1_700_000)}, spendLogs{}); inv.Failed != 1 {
		t.Fatalf("a bill over the limit passed: %+v", inv)
	}
}

// The jobs deferred for spend, and those admitted on a worker's local
// share, are read from the workers' JSON logs: only a deferral whose
// class is spend_limit counts, and only a local hold that admitted.
func TestDeferredForSpendReadsTheWorkersLogs(t *testing.T) {
	dir := t.TempDir()
	log := `{"msg":"job deferred: a wait, not an attempt","error_class":"spend_limit","job_id":"j1"}
{"msg":"job deferred: a wait, not an attempt","error_class":"rate_limited","job_id":"j2"}
not json
{"msg":"attempt succeeded","error_class":"spend_limit","job_id":"j3"}
{"msg":"the tenant's spend balance did not answer; its limit is held locally","job_id":"j4","admitted":true}
{"msg":"the tenant's spend balance did not answer; its limit is held locally","job_id":"j5","admitted":false}
`
	if err := os.WriteFile(filepath.Join(dir, "worker-a.1.log"), []byte(log), 0o644); err != nil {
		t.Fatal(err)
	}
	got := readSpendLogs(dir)
	if len(got.deferred) != 1 || !got.deferred["j1"] || len(got.local) != 1 || !got.local["j4"] {
		t.Fatalf("deferred for spend %v, admitted locally %v", got.deferred, got.local)
	}
}
