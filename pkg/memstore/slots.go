package memstore

import (
	"context"
	"sync"

	"github.com/aijobs/aijobs/pkg/job"
)

// Slots are the tenants' in-flight slots in memory, for tests.
type Slots struct {
	mu sync.Mutex
	by map[string]map[string]bool // tenant: entries
}

// NewSlots returns no slots taken.
func NewSlots() *Slots { return &Slots{by: map[string]map[string]bool{}} }

// Enter takes s when its tenant has fewer than s.Limit slots that have
// not ended.
func (m *Slots) Enter(_ context.Context, s job.Slot) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	es := m.by[s.Tenant]
	if es == nil {
		es = map[string]bool{}
		m.by[s.Tenant] = es
	}
	for e := range es {
		if job.SlotEnded(e, s.Now) {
			delete(es, e)
		}
	}
	if len(es) >= s.Limit {
		return false, nil
	}
	es[s.Entry()] = true
	return true, nil
}

// Leave gives s back.
func (m *Slots) Leave(_ context.Context, s job.Slot) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.by[s.Tenant], s.Entry())
	return nil
}

// Len is how many entries tenant's set holds, ended or not, for tests.
func (m *Slots) Len(tenant string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.by[tenant])
}
