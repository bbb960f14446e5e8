package storetest

import (
	"context"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aijobs/aijobs/pkg/job"
)

// Slots is what every tenant-slot store answers.
type Slots interface {
	Enter(context.Context, job.Slot) (bool, error)
	Leave(context.Context, job.Slot) error
}

// RunSlots is the slot stores' conformance suite: a tenant enters up to
// its limit and no further, a slot left is free again, a slot that has
// ended frees itself, tenants do not share slots, and racing entrants
// never pass the limit; and so at limits a store divides (slotlimits.go).
func RunSlots(t *testing.T, s Slots) {
	ctx := t.Context()
	now := time.Now().UTC().Truncate(time.Millisecond)
	slot := func(tenant string, i int, until time.Duration) job.Slot {
		return job.Slot{Tenant: tenant, JobID: "job_" + strconv.Itoa(i), Now: now, Until: now.Add(until), Limit: 2}
	}
	enter := func(sl job.Slot) bool {
		t.Helper()
		ok, err := s.Enter(ctx, sl)
		if err != nil {
			t.Fatal(err)
		}
		return ok
	}
	a1, a2, a3 := slot("tenant-a", 1, time.Minute), slot("tenant-a", 2, time.Second), slot("tenant-a", 3, time.Minute)
	if !enter(a1) || !enter(a2) {
		t.Fatal("a tenant under its limit was refused")
	}
	if enter(a3) {
		t.Fatal("a tenant entered past its limit")
	}
	if !enter(slot("tenant-b", 1, time.Minute)) {
		t.Fatal("another tenant was refused for tenant-a's slots")
	}
	if err := s.Leave(ctx, a1); err != nil {
		t.Fatal(err)
	}
	if !enter(a3) {
		t.Fatal("a slot left was not free again")
	}
	if err := s.Leave(ctx, a1); err != nil {
		t.Fatalf("leaving a slot twice: %v", err)
	}
	later := slot("tenant-a", 4, time.Minute)
	later.Now = now.Add(2 * time.Second) // a2 has ended: its worker died
	if !enter(later) {
		t.Fatal("a slot that ended was still held")
	}
	t.Run("racing entrants never pass the limit", func(t *testing.T) { racingEntrants(t, s, now) })
	runSlotLimits(t, s, now)
}

// racingEntrants: 12 entrants at once on a tenant allowed 5 get exactly 5.
func racingEntrants(t *testing.T, s Slots, now time.Time) {
	var in atomic.Int64
	var wg sync.WaitGroup
	for i := range 12 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sl := job.Slot{Tenant: "tenant-race", JobID: "job_" + strconv.Itoa(i), Now: now, Until: now.Add(time.Minute), Limit: 5}
			if ok, err := s.Enter(t.Context(), sl); err != nil {
				t.Error(err)
			} else if ok {
				in.Add(1)
			}
		}()
	}
	wg.Wait()
	if in.Load() != 5 {
		t.Fatalf("%d of 12 racing entrants got in, want the limit of 5", in.Load())
	}
}
