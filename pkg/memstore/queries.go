package memstore

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/aijobs/aijobs/pkg/job"
)

// List answers a page of one tenant's jobs, newest first (ties by id), as
// the DynamoDB store does, cursor included.
func (s *Store) List(_ context.Context, q job.ListQuery) (job.Page, error) {
	q.Limit = job.ClampLimit(q.Limit)
	var after *job.Position
	if q.Cursor != "" {
		p, err := job.ParseCursor(q.Cursor)
		if err != nil {
			return job.Page{}, err
		}
		if p.CreatedAt.Before(q.Since) {
			return job.Page{}, &job.Error{Code: job.CodeInvalidRequest, Field: "cursor",
				Message: "the cursor is from before since: keep since as it was for the first page"}
		}
		after = &p
	}
	s.mu.Lock()
	var all []job.Job
	for _, j := range s.jobs {
		if j.Tenant == q.Tenant && !j.CreatedAt.Before(q.Since) {
			all = append(all, clone(j))
		}
	}
	s.mu.Unlock()
	slices.SortFunc(all, func(a, b job.Job) int {
		if c := b.CreatedAt.Compare(a.CreatedAt); c != 0 {
			return c
		}
		return strings.Compare(b.ID, a.ID)
	})
	var page job.Page
	for _, j := range all {
		if after != nil && !beyond(j, *after) {
			continue
		}
		if len(page.Jobs) == q.Limit {
			last := page.Jobs[len(page.Jobs)-1]
			page.Next = job.Position{CreatedAt: last.CreatedAt, ID: last.ID}.Cursor()
			break
		}
		if (q.State == "" || j.State == q.State) && (q.Class == "" || j.ErrorClass == q.Class) {
			page.Jobs = append(page.Jobs, j)
		}
	}
	return page, nil
}

// beyond reports whether j comes after p in newest-first order.
func beyond(j job.Job, p job.Position) bool {
	if c := j.CreatedAt.Compare(p.CreatedAt); c != 0 {
		return c < 0
	}
	return strings.Compare(j.ID, p.ID) < 0
}

// Failures calls each for every failed or abandoned job that ended in
// [q.Since, q.Until) with one of q.Classes (any class when empty).
func (s *Store) Failures(_ context.Context, q job.FailureQuery, each func(job.Failure) error) error {
	s.mu.Lock()
	var found []job.Failure
	for id, at := range s.ended {
		j := s.jobs[id]
		if at.Before(q.Since) || !at.Before(q.Until) || (len(q.Classes) > 0 && !slices.Contains(q.Classes, j.ErrorClass)) ||
			(q.InputHash != "" && j.InputHash != q.InputHash) {
			continue
		}
		f := job.FailureOf(j)
		f.EndedAt = at
		if q.Saved {
			f.Saved = j.Saved
		}
		found = append(found, f)
	}
	s.mu.Unlock()
	for _, f := range found {
		if err := each(f); err != nil {
			return err
		}
	}
	return nil
}

// Unfinished calls each with the id of every queued or running job created
// before before.
func (s *Store) Unfinished(_ context.Context, before time.Time, each func(id string) error) error {
	s.mu.Lock()
	var found []job.Job
	for _, j := range s.jobs {
		if !j.State.Terminal() && j.CreatedAt.Before(before) {
			found = append(found, j)
		}
	}
	s.mu.Unlock()
	slices.SortFunc(found, func(a, b job.Job) int {
		if c := a.CreatedAt.Compare(b.CreatedAt); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	for _, j := range found {
		if err := each(j.ID); err != nil {
			return err
		}
	}
	return nil
}

// Finished calls each with up to q.Limit of q's jobs, newest first.
func (s *Store) Finished(_ context.Context, q job.FinishedQuery, each func(job.Job) error) error {
	s.mu.Lock()
	var found []job.Job
	for _, j := range s.jobs {
		if q.Includes(j) {
			found = append(found, clone(j))
		}
	}
	s.mu.Unlock()
	slices.SortFunc(found, func(a, b job.Job) int { return b.CreatedAt.Compare(a.CreatedAt) })
	for _, j := range found[:min(len(found), q.Limit)] {
		if err := each(j); err != nil {
			return err
		}
	}
	return nil
}

// Recent calls each with the summary of every job q includes (created at
// or after q.Since, or not finished), in no particular order.
func (s *Store) Recent(_ context.Context, q job.RecentQuery, each func(job.Job) error) error {
	s.mu.Lock()
	var found []job.Job
	for _, j := range s.jobs {
		if q.Includes(j) {
			found = append(found, job.Summary(clone(j)))
		}
	}
	s.mu.Unlock()
	for _, j := range found {
		if err := each(j); err != nil {
			return err
		}
	}
	return nil
}
