package memstore

import (
	"context"
	"slices"
	"strings"

	"github.com/aijobs/aijobs/pkg/job"
)

// Enlist applies job.Enlist.
func (s *Store) Enlist(_ context.Context, e job.Enlist) (job.Job, error) {
	return s.apply(e.ID, e.Allows, e.Apply, write{}, e.Now)
}

// Collect applies job.Collect.
func (s *Store) Collect(_ context.Context, c job.Collect) (job.Job, error) {
	return s.apply(c.ID, c.Allows, c.Apply, write{}, c.Now)
}

// Enlisted answers up to limit of the jobs waiting in lane, oldest
// enlisted first (ties by id), as DynamoDB's enlisted index does.
func (s *Store) Enlisted(_ context.Context, lane string, limit int) ([]job.Enlistee, error) {
	if lane == "" || limit < 1 {
		return nil, nil
	}
	s.mu.Lock()
	var out []job.Enlistee
	for _, j := range s.jobs {
		if j.Enlisted == lane && !j.EnlistedAt.IsZero() { // the index is sparse on both keys
			out = append(out, job.Enlistee{ID: j.ID, At: j.EnlistedAt})
		}
	}
	s.mu.Unlock()
	slices.SortFunc(out, func(a, b job.Enlistee) int {
		if c := a.At.Compare(b.At); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	return out[:min(len(out), limit)], nil
}
