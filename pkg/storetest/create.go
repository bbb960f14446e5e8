package storetest

import (
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/aijobs/aijobs/pkg/job"
)

func createAndGet(t *testing.T, s *suite) {
	for _, c := range []struct {
		name string
		mut  func(*job.Job)
	}{
		{"queued, optional fields empty", nil},
		{"every field set", func(j *job.Job) {
			// JSON is kept byte for byte: spacing, escapes, HTML characters.
			j.Input = json.RawMessage(`{"messages":[{"role":"user","content":"<b>&amp;</b> é \u00e9 \"q\""}], "max_tokens": 10}`)
			j.Metadata = json.RawMessage(`{"any":["json",1,null],"nested":{"k":"v"}}`)
			j.State, j.Attempts, j.MaxAttempts = job.Running, 2, 7
			// 2^53+1 nanocents: an amount float64 cannot hold exactly.
			j.Budget, j.Cost = 9_007_199_254_740_993, 333_333_333
			// A premium lane's attempts leave the saving negative.
			j.Saved, j.Lanes = -123_456_789, []job.Lane{job.Priority, job.Standard}
			j.Deadline = base.Add(36*time.Hour + 999*time.Millisecond)
			j.LeaseOwner, j.LeaseUntil = "worker-1", base.Add(90*time.Second+time.Millisecond)
			j.ErrorClass, j.ErrorDetail = job.RateLimited, "http 429"
			j.Result, j.ResultModel, j.ResultLane, j.Progress = json.RawMessage(`{"output":"x"}`), "gpt-x", job.Priority, 0.375
			j.Version = 7
			j.CreatedAt, j.UpdatedAt, j.ExpiresAt = base.Add(-time.Hour), base.Add(time.Millisecond), keep
			j.Callback = job.Callback{URL: "https://hooks.example.com/a?b=c", Events: []job.State{job.Running, job.Failed, job.Abandoned}}
			j.Deliveries = job.Deliveries{Attempts: 3, LastStatus: 500, DeliveredAt: base.Add(time.Second), DeliveredVersion: 6}
			j.Enlisted, j.EnlistedAt, j.Batch = job.LaneKey("default", 1), base.Add(-time.Minute), "batch-1"
		}},
		// The lanes are kept in the caller's order, not sorted as a set
		// would keep them.
		{"lanes in the caller's order", func(j *job.Job) { j.Lanes = []job.Lane{job.Standard, job.Flex} }},
		{"one lane", func(j *job.Job) { j.Lanes = []job.Lane{job.Flex} }},
		{"a saving and no lanes", func(j *job.Job) { j.Saved = 1 }},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			j := s.create(t, c.mut)
			same(t, "get", s.get(t, j.ID), j)
		})
	}
}

// peek: a poll's read answers what job.Peeked keeps of the record, exactly
// as a get does; an unknown id is not found.
func peek(t *testing.T, s *suite) {
	j := s.create(t, func(j *job.Job) {
		j.Input = json.RawMessage(`{"messages":[{"role":"user","content":"a long input"}],"max_tokens":10}`)
		j.Metadata = json.RawMessage(`{"k":"v"}`)
		j.State, j.Attempts, j.MaxAttempts = job.Queued, 2, 7
		j.Budget, j.Cost, j.CostEstimated = 9_007_199_254_740_993, 333_333_333, true
		j.Saved, j.Lanes = 42, []job.Lane{job.Flex, job.Standard}
		j.Deadline = base.Add(36 * time.Hour)
		j.LeaseOwner, j.LeaseUntil, j.NotBefore = "worker-1", base.Add(90*time.Second), base.Add(5*time.Second)
		j.ErrorClass, j.ErrorDetail = job.RateLimited, "http 429 from the provider"
		j.Result, j.ResultModel, j.ResultLane, j.Progress = json.RawMessage(`{"output":"x"}`), "gpt-x", job.Flex, 0.375
		j.Version, j.Replays = 7, 1
		j.CreatedAt, j.UpdatedAt, j.ExpiresAt = base.Add(-time.Hour), base.Add(time.Millisecond), keep
		j.Callback = job.Callback{URL: "https://hooks.example.com/a", Events: []job.State{job.Running, job.Failed}}
		j.Deliveries = job.Deliveries{Attempts: 3, LastStatus: 500, DeliveredAt: base.Add(time.Second), DeliveredVersion: 6}
		j.Enlisted, j.EnlistedAt, j.Batch = job.LaneKey("default", 1), base.Add(-time.Minute), "batch-1"
	})
	want := job.Peeked(s.get(t, j.ID))
	got, err := s.store.Peek(t.Context(), j.ID)
	if err != nil {
		t.Fatalf("peek: %v", err)
	}
	same(t, "peek", got, want)
	if _, err := s.store.Peek(t.Context(), job.NewID(tenant, "never-created")); job.ErrorCode(err) != job.CodeNotFound {
		t.Fatalf("peek of an unknown id: err = %v, want not_found", err)
	}
}

func duplicateCreate(t *testing.T, s *suite) {
	j := s.create(t, func(j *job.Job) { j.Metadata = json.RawMessage(`{"first":true}`) })
	again := j
	again.InputHash, again.Input, again.Metadata, again.Version = "sha256:other", json.RawMessage(`{"other":1}`), nil, 9
	_, err := s.store.Create(t.Context(), again)
	s.refused(t, "second create with the same id", err, j)
}

func unknownIDs(t *testing.T, s *suite) {
	ctx, id, now := t.Context(), job.NewID(tenant, "never-created"), base
	_, err := s.store.Get(ctx, id)
	notFound(t, "get", err)
	for _, c := range []struct {
		name string
		call func() error
	}{
		{"claim", func() error {
			_, err := s.store.Claim(ctx, job.Claim{ID: id, Owner: "me", Now: now, LeaseUntil: now.Add(time.Minute)})
			return err
		}},
		{"heartbeat", func() error {
			_, err := s.store.Heartbeat(ctx, job.Heartbeat{ID: id, Owner: "me", Now: now, LeaseUntil: now.Add(time.Minute)})
			return err
		}},
		{"succeed with a cost", func() error {
			_, err := s.store.Succeed(ctx, job.Succeed{ID: id, Owner: "me", Now: now, Settlement: job.Settlement{Cost: 1}, Result: json.RawMessage(`{}`)})
			return err
		}},
		{"release with a cost", func() error {
			_, err := s.store.Release(ctx, job.Release{ID: id, Owner: "me", Now: now, Settlement: job.Settlement{Cost: 1}, Class: job.Timeout})
			return err
		}},
		{"end with an owner and a cost", func() error {
			_, err := s.store.End(ctx, job.End{ID: id, Owner: "me", Now: now, Settlement: job.Settlement{Cost: 1}, Class: job.Auth})
			return err
		}},
		{"end with no owner", func() error {
			_, err := s.store.End(ctx, job.End{ID: id, Now: now, Class: job.DeadlineExceeded})
			return err
		}},
		{"cancel", func() error {
			_, err := s.store.Cancel(ctx, job.Cancel{ID: id, Tenant: tenant, Now: now})
			return err
		}},
		{"enlist", func() error {
			_, err := s.store.Enlist(ctx, job.Enlist{ID: id, Owner: "me", Now: now, Lane: job.LaneKey("default", 1), Until: now.Add(time.Hour)})
			return err
		}},
		{"enlist into no lane", func() error {
			_, err := s.store.Enlist(ctx, job.Enlist{ID: id, Owner: "me", Now: now, Until: now.Add(time.Hour)})
			return err
		}},
		{"collect", func() error {
			_, err := s.store.Collect(ctx, job.Collect{ID: id, Owner: job.BatchOwner("me"), Now: now, Batch: "b1"})
			return err
		}},
	} {
		notFound(t, c.name, c.call())
	}
	// No cost add (or anything else) created the record.
	_, err = s.store.Get(ctx, id)
	notFound(t, "get after the transitions", err)
}

// copies: a record shares no memory with its caller, in either direction.
func copies(t *testing.T, s *suite) {
	ctx := t.Context()
	input, lanes := []byte(`{"a":1}`), []job.Lane{job.Flex, job.Standard}
	j := s.record(func(j *job.Job) { j.Input, j.Lanes = input, lanes })
	created, err := s.store.Create(ctx, j)
	if err != nil {
		t.Fatal(err)
	}
	input[1], lanes[0] = 'X', job.Priority
	created.Lanes[1] = job.Priority
	got := s.get(t, j.ID)
	if string(got.Input) != `{"a":1}` {
		t.Fatalf("the caller's input buffer changed the stored record: %s", got.Input)
	}
	if !slices.Equal(got.Lanes, []job.Lane{job.Flex, job.Standard}) {
		t.Fatalf("the caller's lanes changed the stored record: %v", got.Lanes)
	}
	got.Input[1], got.Lanes[0] = 'Y', job.Priority
	if again := s.get(t, j.ID); string(again.Input) != `{"a":1}` || !slices.Equal(again.Lanes, []job.Lane{job.Flex, job.Standard}) {
		t.Fatal("a returned record shares memory with the stored one")
	}

	now := base.Add(time.Minute)
	s.claim(t, j.ID, "me", now)
	result := []byte(`{"o":1}`)
	done, err := s.store.Succeed(ctx, job.Succeed{ID: j.ID, Owner: "me", Now: now, Result: result, ExpiresAt: keep})
	if err != nil {
		t.Fatal(err)
	}
	result[1] = 'X'
	done.Result[2] = 'Y'
	if r := s.get(t, j.ID).Result; string(r) != `{"o":1}` {
		t.Fatalf("the caller's result buffer changed the stored record: %s", r)
	}
}
