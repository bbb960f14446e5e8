package storetest

import (
	"testing"
	"time"

	"github.com/aijobs/aijobs/pkg/job"
)

// delivery holds the stores to job.Delivery: every attempt counts, the
// newest acknowledged version wins whatever order deliveries land in, and
// an unknown job is not found.
func delivery(t *testing.T, s *suite) {
	withCallback := func(j *job.Job) {
		j.Callback = job.Callback{URL: "https://hooks.example.com/aijobs", Events: []job.State{job.Running, job.Succeeded}}
		j.State, j.Version = job.Succeeded, 5
	}
	t.Run("attempts count, the newest acknowledged version wins", func(t *testing.T) {
		t.Parallel()
		j := s.create(t, withCallback)
		at := base.Add(time.Minute)

		got, err := s.store.RecordDelivery(t.Context(), job.Delivery{ID: j.ID, Now: at, Version: 4, Status: 503})
		want := j
		want.Deliveries = job.Deliveries{Attempts: 1, LastStatus: 503}
		want.Version, want.UpdatedAt = j.Version+1, at
		s.applied(t, "a failed delivery", got, err, want)

		at2 := at.Add(time.Second)
		got, err = s.store.RecordDelivery(t.Context(), job.Delivery{ID: j.ID, Now: at2, Version: 5, Status: 204, Delivered: true})
		want.Deliveries = job.Deliveries{Attempts: 2, LastStatus: 204, DeliveredAt: at2, DeliveredVersion: 5}
		want.Version, want.UpdatedAt = want.Version+1, at2
		s.applied(t, "a delivery of version 5", got, err, want)

		// Version 4's retry succeeds after version 5 was acknowledged: it
		// counts, and leaves the newest acknowledged version alone.
		at3 := at2.Add(time.Second)
		got, err = s.store.RecordDelivery(t.Context(), job.Delivery{ID: j.ID, Now: at3, Version: 4, Status: 200, Delivered: true})
		want.Deliveries.Attempts, want.Deliveries.LastStatus = 3, 200
		want.Version, want.UpdatedAt = want.Version+1, at3
		s.applied(t, "a late delivery of version 4", got, err, want)
		same(t, "get", s.get(t, j.ID), want)
	})
	t.Run("an unknown job is not found", func(t *testing.T) {
		t.Parallel()
		_, err := s.store.RecordDelivery(t.Context(), job.Delivery{ID: job.NewID(tenant, "never-created"), Now: base, Version: 1, Status: 200, Delivered: true})
		notFound(t, "record a delivery", err)
	})
	t.Run("the clock never moves updated_at back", func(t *testing.T) {
		t.Parallel()
		j := s.create(t, withCallback, func(j *job.Job) { j.UpdatedAt = base.Add(time.Hour) })
		got, err := s.store.RecordDelivery(t.Context(), job.Delivery{ID: j.ID, Now: base, Version: 5, Status: 0})
		want := j
		want.Deliveries = job.Deliveries{Attempts: 1}
		want.Version, want.UpdatedAt = j.Version+1, j.UpdatedAt.Add(time.Millisecond)
		s.applied(t, "a delivery recorded by a slow clock", got, err, want)
	})
}
