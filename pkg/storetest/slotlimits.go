package storetest

import (
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aijobs/aijobs/pkg/job"
)

// The slot cases at the sizes where a store must divide a tenant's limit
// to stay cheap (docs/fairness.md, "How slots scale"): a store may then
// refuse an Enter near the limit while a place is free where it did not
// look, but never let in more than the limit, and a place left or ended
// must be found again.

// slotsAt is a tenant's slots at one limit, for one case.
type slotsAt struct {
	t      *testing.T
	s      Slots
	tenant string
	limit  int
	now    time.Time
}

func (a slotsAt) slot(i int, until time.Duration) job.Slot {
	return job.Slot{Tenant: a.tenant, JobID: "job_" + strconv.Itoa(i), Now: a.now, Until: a.now.Add(until), Limit: a.limit}
}

func (a slotsAt) enter(sl job.Slot) bool {
	a.t.Helper()
	ok, err := a.s.Enter(a.t.Context(), sl)
	if err != nil {
		a.t.Fatal(err)
	}
	return ok
}

// fill enters new jobs from first until the tenant holds its limit
// (within ten tries a place), and answers the slots that got in. A
// store that looks at some of its places a try gets the last ones only
// after a few tries, but it must get them.
func (a slotsAt) fill(first int, until time.Duration) []job.Slot {
	a.t.Helper()
	var in []job.Slot
	for i := first; len(in) < a.limit && i < first+10*a.limit; i++ {
		if sl := a.slot(i, until); a.enter(sl) {
			in = append(in, sl)
		}
	}
	if len(in) != a.limit {
		a.t.Fatalf("%d of a limit of %d entered in %d tries", len(in), a.limit, 10*a.limit)
	}
	if a.enter(a.slot(first+10*a.limit, until)) {
		a.t.Fatalf("a tenant holding its limit of %d let one more in", a.limit)
	}
	return in
}

func runSlotLimits(t *testing.T, s Slots, now time.Time) {
	t.Run("64 racing entrants at a limit of 10", func(t *testing.T) { manyRacingEntrants(t, s, now) })
	t.Run("ended entries free their places at a limit of 100", func(t *testing.T) {
		a := slotsAt{t: t, s: s, tenant: "tenant-ends", limit: 100, now: now}
		a.fill(0, time.Second)
		a.now = now.Add(2 * time.Second) // every worker died
		a.fill(1000, time.Minute)
	})
	t.Run("a leave frees its place at a limit of 100", func(t *testing.T) {
		a := slotsAt{t: t, s: s, tenant: "tenant-leaves", limit: 100, now: now}
		in := a.fill(0, time.Minute)
		said, bare := in[7], in[42]
		if err := s.Leave(t.Context(), said); err != nil {
			t.Fatal(err)
		}
		if !a.enter(said) {
			t.Fatal("the place a leave gave back was not free again")
		}
		// The worker gives a queued place back without its limit
		// (worker.admission.started): the store must find it all the same.
		bareLeave := bare
		bareLeave.Limit, bareLeave.Now = 0, time.Time{}
		if err := s.Leave(t.Context(), bareLeave); err != nil {
			t.Fatal(err)
		}
		if !a.enter(bare) {
			t.Fatal("the place a leave that did not say its limit gave back was not free again")
		}
		if a.enter(a.slot(5000, time.Minute)) {
			t.Fatal("a tenant back at its limit let one more in")
		}
	})
}

// manyRacingEntrants: 64 entrants at once on a tenant allowed 10 get
// exactly 10: never more, and at a limit this small no store may refuse
// a place that is free.
func manyRacingEntrants(t *testing.T, s Slots, now time.Time) {
	var in atomic.Int64
	var wg sync.WaitGroup
	for i := range 64 {
		wg.Go(func() {
			sl := job.Slot{Tenant: "tenant-race-64", JobID: "job_" + strconv.Itoa(i), Now: now, Until: now.Add(time.Minute), Limit: 10}
			if ok, err := s.Enter(t.Context(), sl); err != nil {
				t.Error(err)
			} else if ok {
				in.Add(1)
			}
		})
	}
	wg.Wait()
	if in.Load() != 10 {
		t.Fatalf("%d of 64 racing entrants got in, want the limit of 10", in.Load())
	}
}
