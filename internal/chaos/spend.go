package chaos

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/aijobs/aijobs/pkg/job"
)

// spendLimits are the run's tenant spend limits (AIJOBS_TENANT_SPEND,
// docs/spend.md): three of the four tenants at limits their jobs pass, so
// some are deferred and abandoned `spend_limit` (docs/chaos.md, "Spend
// limits"). A run's jobs bill about 0.013 cents each and a tenant's
// quarter of 500 about 1.6 cents; a large input's worst case in the
// priority lane holds about 0.8 cents, so even a short run's holds
// reach a cent. t1's month limit is below its day's: the month binds.
var spendLimits = map[string]string{
	"t0": "day:$0.01",
	"t1": "day:$0.02+month:$0.01",
	"t2": "day:$0.02",
}

// spendText is spendLimits as AIJOBS_TENANT_SPEND, tenants as the
// records name them.
func spendText() string {
	var parts []string
	for t, l := range spendLimits {
		parts = append(parts, "jwt:"+t+"="+l)
	}
	slices.Sort(parts)
	return strings.Join(parts, ",")
}

// spendDeadline is the deadline a spend-limited tenant's job gets when
// the schedule gave it none: a job deferred for spend waits until its
// deadline, and must end (`spend_limit`) well within the run's bound.
func spendDeadline(sd Seed, i int) int { return 20 + sd.Intn(25, "spend_deadline_s", i) }

// TenantSpend is one limited tenant's spend in one period, from the
// records (each job's cost, estimates included, the job counted in the
// period it was created in) and from the model server's bill for its jobs
// (each generation in the period it started in), and what its jobs did.
type TenantSpend struct {
	Tenant           string
	Period           job.Period
	Key              string
	Limit            job.Nanocents
	Recorded, Billed job.Nanocents
	Succeeded        int
	Abandoned        int // abandoned spend_limit
	Deferred         int // jobs deferred for spend at least once (the workers' logs)
	RefusedAtCreate  int // creates answered 429 spend_limit
	Jobs             int
	// Local are the jobs an attempt of which a worker admitted on its
	// local share of the limit (the balance did not answer: docs/spend.md,
	// "When the balance does not answer"), and LocalRecorded their
	// recorded cost: what the shared balance may never have counted.
	Local         int
	LocalRecorded job.Nanocents
	// Estimated is the recorded cost of the jobs marked cost_estimated.
	Estimated job.Nanocents
}

func (s TenantSpend) over() bool { return s.Recorded > s.Limit || s.Billed > s.Limit }

func (s TenantSpend) line() string {
	return fmt.Sprintf("  tenant %s %s %s: limit %s, recorded %s (%s of it on jobs marked estimated), billed %s; %d jobs: %d succeeded, %d abandoned spend_limit, %d deferred for spend, %d creates refused 429 spend_limit; %d admitted on a worker's local share, recording %s",
		s.Tenant, s.Period, s.Key, s.Limit, s.Recorded, s.Estimated, s.Billed, s.Jobs, s.Succeeded, s.Abandoned, s.Deferred, s.RefusedAtCreate, s.Local, s.LocalRecorded)
}

// spendKey names a tenant's period balance.
type spendKey struct {
	tenant, key string
	period      job.Period
}

// checkSpend is invariant 7: no limited tenant's recorded spend, nor its
// bill, in a period exceeds its limit.
func (h *harness) checkSpend(facts []jobFacts, logs spendLogs) (Invariant, []TenantSpend) {
	inv := Invariant{N: 7, Name: "no tenant's recorded spend in a period exceeds its limit (records and bill)"}
	prices := h.prices()
	by := map[spendKey]*TenantSpend{}
	at := func(tenant string, l job.PeriodLimit, t time.Time) *TenantSpend {
		k := spendKey{tenant, l.Period.Key(t), l.Period}
		if by[k] == nil {
			by[k] = &TenantSpend{Tenant: tenant, Period: l.Period, Key: k.key, Limit: l.Limit}
		}
		return by[k]
	}
	for _, f := range facts {
		tenant := "jwt:" + f.run.plan.Tenant
		for _, l := range h.cfg.Spend.For(tenant) {
			f.run.mu.Lock()
			created, refused := f.run.created, f.run.spendRefused
			f.run.mu.Unlock()
			if f.has {
				created = f.rec.CreatedAt
			}
			s := at(tenant, l, created)
			s.Jobs++
			s.count(f, refused, logs, f.run.id)
			for _, g := range f.gens {
				p := prices[laneKey{g.Model, g.ServedLane()}]
				at(tenant, l, g.Start).Billed += p.cost(g.Tokens())
			}
		}
	}
	var out []TenantSpend
	for _, s := range by {
		out = append(out, *s)
	}
	slices.SortFunc(out, func(a, b TenantSpend) int {
		return strings.Compare(a.Tenant+string(a.Period)+a.Key, b.Tenant+string(b.Period)+b.Key)
	})
	for _, s := range out {
		inv.Checked++
		if s.over() {
			inv.fail("over its limit:" + s.line())
		}
	}
	return inv, out
}

// count adds one job's record to s.
func (s *TenantSpend) count(f jobFacts, refused bool, logs spendLogs, id string) {
	if refused {
		s.RefusedAtCreate++
	}
	if logs.deferred[id] {
		s.Deferred++
	}
	if !f.has {
		return
	}
	s.Recorded += f.rec.Cost
	if logs.local[id] {
		s.Local++
		s.LocalRecorded += f.rec.Cost
	}
	if estimated(f.rec) {
		s.Estimated += f.rec.Cost
	}
	switch {
	case f.rec.State == job.Succeeded:
		s.Succeeded++
	case f.rec.State == job.Abandoned && f.rec.ErrorClass == job.SpendLimit:
		s.Abandoned++
	}
}

// spendLogs are what the workers' logs say of the jobs' spend: those
// deferred for their tenant's limit at least once (the record keeps only
// its last error class), and those an attempt of which was admitted on a
// worker's local share.
type spendLogs struct{ deferred, local map[string]bool }

// readSpendLogs reads the workers' JSON logs in logDir.
func readSpendLogs(logDir string) spendLogs {
	out := spendLogs{deferred: map[string]bool{}, local: map[string]bool{}}
	files, _ := filepath.Glob(filepath.Join(logDir, "worker-*.log"))
	for _, name := range files {
		f, err := os.Open(name)
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			var l struct {
				Msg      string `json:"msg"`
				Class    string `json:"error_class"`
				JobID    string `json:"job_id"`
				Admitted bool   `json:"admitted"`
			}
			switch {
			case json.Unmarshal(sc.Bytes(), &l) != nil:
			case l.Class == string(job.SpendLimit) && strings.HasPrefix(l.Msg, "job deferred"):
				out.deferred[l.JobID] = true
			case l.Admitted && strings.HasPrefix(l.Msg, "the tenant's spend balance did not answer"):
				out.local[l.JobID] = true
			}
		}
		f.Close()
	}
	return out
}
