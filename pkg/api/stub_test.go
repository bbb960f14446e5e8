package api

import (
	"context"
	"sync/atomic"

	"github.com/aijobs/aijobs/pkg/job"
)

// stubStore answers with the functions it is given and counts calls; a nil
// function panics, so a test proves a path never reaches the store.
type stubStore struct {
	create func(job.Job) (job.Job, error)
	get    func(string) (job.Job, error)
	// peek answers Peek; nil means get does (a store never stale).
	peek   func(string) (job.Job, error)
	cancel func(job.Cancel) (job.Job, error)
	list   func(job.ListQuery) (job.Page, error)
	calls  atomic.Int64
}

func (s *stubStore) List(_ context.Context, q job.ListQuery) (job.Page, error) {
	s.calls.Add(1)
	return s.list(q)
}

func (s *stubStore) Create(_ context.Context, j job.Job) (job.Job, error) {
	s.calls.Add(1)
	return s.create(j)
}

func (s *stubStore) Get(_ context.Context, id string) (job.Job, error) {
	s.calls.Add(1)
	return s.get(id)
}

func (s *stubStore) Peek(_ context.Context, id string) (job.Job, error) {
	s.calls.Add(1)
	if s.peek == nil {
		return s.get(id)
	}
	return s.peek(id)
}

func (s *stubStore) Cancel(_ context.Context, c job.Cancel) (job.Job, error) {
	s.calls.Add(1)
	return s.cancel(c)
}

// failingStore answers every call with err.
func failingStore(err error) *stubStore {
	return &stubStore{
		create: func(job.Job) (job.Job, error) { return job.Job{}, err },
		get:    func(string) (job.Job, error) { return job.Job{}, err },
		cancel: func(job.Cancel) (job.Job, error) { return job.Job{}, err },
		list:   func(job.ListQuery) (job.Page, error) { return job.Page{}, err },
	}
}
