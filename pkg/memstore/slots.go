package memstore

import (
	"context"

	"github.com/aijobs/aijobs/pkg/job"
)

// Slots are the tenants' in-flight slots in memory, for tests: one exact
// set a tenant, as nothing here is billed by the item or has a hot key
// (pkg/dynamodb divides a limit over shards: docs/fairness.md, "How slots
// scale"); it passes the same suite, a Leave with or without its limit.
type Slots struct {
	t table[string, map[string]bool] // tenant: entries
}

// NewSlots returns no slots taken.
func NewSlots() *Slots { return &Slots{} }

// Enter takes s when its tenant has fewer than s.Limit slots that have
// not ended.
func (m *Slots) Enter(_ context.Context, s job.Slot) (bool, error) {
	entered := false
	m.t.change(s.Tenant, func(es map[string]bool, _ bool) (map[string]bool, bool) {
		if es == nil {
			es = map[string]bool{}
		}
		for e := range es {
			if job.SlotEnded(e, s.Now) {
				delete(es, e)
			}
		}
		if entered = len(es) < s.Limit; entered {
			es[s.Entry()] = true
		}
		return es, true
	})
	return entered, nil
}

// Leave gives s back.
func (m *Slots) Leave(_ context.Context, s job.Slot) error {
	m.t.change(s.Tenant, func(es map[string]bool, _ bool) (map[string]bool, bool) {
		delete(es, s.Entry()) // the set is the table's own: changed in place
		return es, false
	})
	return nil
}

// Len is how many entries tenant's set holds, ended or not, for tests.
func (m *Slots) Len(tenant string) int {
	n := 0
	m.t.change(tenant, func(es map[string]bool, _ bool) (map[string]bool, bool) {
		n = len(es) // read under the lock: Enter changes the set in place
		return es, false
	})
	return n
}
