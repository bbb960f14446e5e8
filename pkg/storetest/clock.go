package storetest

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/aijobs/aijobs/pkg/job"
)

// versionAndUpdated: every applied transition, and the cost-only add of a
// refused finish, adds exactly 1 to version and sets updated_at to Now, or
// to one millisecond after the record's updated_at when the writer's clock
// is not ahead of it (skew between Lambdas). Lease and deadline checks keep
// the writer's Now.
func versionAndUpdated(t *testing.T, s *suite) {
	// The record was last written at last; the clocks below range from an
	// hour behind it to a second ahead. Leases held by "me" outlive them all;
	// leases held by "old" have expired for them all; so has no deadline.
	last := base.Add(2 * time.Hour)
	held := running("me", last.Add(time.Hour))
	expired := running("old", base.Add(time.Hour))
	for _, w := range []struct {
		name     string
		mut      func(*job.Job)
		call     func(t *testing.T, id string, now time.Time) (job.Job, error)
		costOnly bool // refused: only its cost is added
	}{
		{"claim", nil, func(t *testing.T, id string, now time.Time) (job.Job, error) {
			return s.store.Claim(t.Context(), job.Claim{ID: id, Owner: "me", Now: now, LeaseUntil: now.Add(time.Minute)})
		}, false},
		{"write-off", expired, func(t *testing.T, id string, now time.Time) (job.Job, error) {
			return s.store.WriteOff(t.Context(), job.WriteOff{ID: id, Owner: "old", Now: now, Version: 41, Held: reserve, State: job.Running})
		}, false},
		{"heartbeat", held, func(t *testing.T, id string, now time.Time) (job.Job, error) {
			return s.store.Heartbeat(t.Context(), job.Heartbeat{ID: id, Owner: "me", Now: now, LeaseUntil: now.Add(time.Minute), Progress: 0.5})
		}, false},
		{"succeed", held, func(t *testing.T, id string, now time.Time) (job.Job, error) {
			return s.store.Succeed(t.Context(), job.Succeed{ID: id, Owner: "me", Now: now, Settlement: job.Settlement{Cost: 5}, Result: json.RawMessage(`{}`), ExpiresAt: keep})
		}, false},
		{"release", held, func(t *testing.T, id string, now time.Time) (job.Job, error) {
			return s.store.Release(t.Context(), job.Release{ID: id, Owner: "me", Now: now, Settlement: job.Settlement{Cost: 5}, Class: job.Overloaded})
		}, false},
		{"end with an owner", held, func(t *testing.T, id string, now time.Time) (job.Job, error) {
			return s.store.End(t.Context(), job.End{ID: id, Owner: "me", Now: now, Settlement: job.Settlement{Cost: 5}, Class: job.InvalidRequest, ExpiresAt: keep})
		}, false},
		{"end with no owner", nil, func(t *testing.T, id string, now time.Time) (job.Job, error) {
			return s.store.End(t.Context(), job.End{ID: id, Now: now, Class: job.DeadlineExceeded, ExpiresAt: keep})
		}, false},
		{"cancel", held, func(t *testing.T, id string, now time.Time) (job.Job, error) {
			return s.store.Cancel(t.Context(), job.Cancel{ID: id, Tenant: tenant, Now: now, ExpiresAt: keep})
		}, false},
		{"refused succeed (cost only)", expired, func(t *testing.T, id string, now time.Time) (job.Job, error) {
			return s.store.Succeed(t.Context(), job.Succeed{ID: id, Owner: "me", Now: now, Settlement: job.Settlement{Cost: 5}, Result: json.RawMessage(`{}`), ExpiresAt: keep})
		}, true},
	} {
		for _, clock := range []struct {
			name     string
			now      time.Time
			wantTime time.Time
		}{
			{"clock ahead", last.Add(time.Second), last.Add(time.Second)},
			{"same millisecond", last, last.Add(time.Millisecond)},
			{"sub-millisecond ahead", last.Add(900 * time.Microsecond), last.Add(time.Millisecond)},
			{"clock an hour behind", last.Add(-time.Hour), last.Add(time.Millisecond)},
		} {
			t.Run(w.name+"/"+clock.name, func(t *testing.T) {
				t.Parallel()
				j := s.create(t, w.mut, func(j *job.Job) {
					j.Version, j.UpdatedAt, j.Deadline = 41, last, base.Add(3*time.Hour)
				})
				got, err := w.call(t, j.ID, clock.now)
				if w.costOnly {
					var ok bool
					if got, ok = job.ConflictJob(err); !ok {
						t.Fatalf("want a Conflict, got %v", err)
					}
				} else if err != nil {
					t.Fatal(err)
				}
				if got.Version != 42 {
					t.Errorf("version = %d, want 42", got.Version)
				}
				if !got.UpdatedAt.Equal(clock.wantTime) {
					t.Errorf("updated_at = %s, want %s", show(got.UpdatedAt), show(clock.wantTime))
				}
				same(t, "stored", s.get(t, j.ID), got)
			})
		}
	}
}

// skewedInARow: writers whose clocks are all behind still move updated_at
// forward one millisecond per write.
func skewedInARow(t *testing.T, s *suite) {
	last := base.Add(time.Hour)
	j := s.create(t, running("me", last.Add(time.Hour)), func(j *job.Job) { j.UpdatedAt = last })
	behind := base.Add(time.Minute)
	want := j
	for i := range 3 {
		got, err := s.store.Heartbeat(t.Context(), job.Heartbeat{ID: j.ID, Owner: "me", Now: behind, LeaseUntil: last.Add(time.Hour), Progress: 0.1})
		want.Progress, want.Version, want.UpdatedAt = 0.1, want.Version+1, last.Add(time.Duration(i+1)*time.Millisecond)
		s.applied(t, "skewed heartbeat", got, err, want)
	}
	_, err := s.store.Release(t.Context(), job.Release{ID: j.ID, Owner: "other", Now: behind, Settlement: job.Settlement{Cost: 2}, Class: job.Timeout})
	want.Cost, want.Version, want.UpdatedAt = 2, want.Version+1, want.UpdatedAt.Add(time.Millisecond)
	s.refused(t, "skewed refused release (cost only)", err, want)
}
