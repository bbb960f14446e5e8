package storetest

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/aijobs/aijobs/pkg/job"
)

// succeedByRef: an answer too large for the record is recorded by its
// place in the payload store (docs/payloads.md, "Answers"): the ref is
// stored and read back whole, a poll's peek carries it (a poll links the
// answer from it), the record keeps no inline result, and a later success
// with an inline answer (a replay's) leaves no stale ref beside it.
func succeedByRef(t *testing.T, s *suite) {
	now := base.Add(time.Minute)
	j := s.create(t, attempt(now), func(j *job.Job) { j.Result = json.RawMessage(`{"output":"stale"}`) })
	key := "results/" + j.ID + "/me"
	ref := &job.Payload{Key: key, Size: 1 << 20, SHA256: "sha256:ab"}
	got, err := s.store.Succeed(t.Context(), job.Succeed{ID: j.ID, Owner: "me", Now: now, Settlement: job.Settlement{Cost: 6, Held: reserve},
		ResultRef: ref, Model: "m", Lane: job.Standard, ExpiresAt: keep})
	want := j
	want.State, want.Result, want.ResultModel, want.ResultLane = job.Succeeded, nil, "m", job.Standard
	want.ResultRef = &job.Payload{Key: key, Size: 1 << 20, SHA256: "sha256:ab"}
	want.ErrorClass, want.ErrorDetail = "", ""
	want.LeaseOwner, want.LeaseUntil = "", time.Time{}
	want.Cost, want.Held, want.Progress, want.ExpiresAt = j.Cost+6, 0, 1, keep
	want.RunTime = j.RunTime
	want.Version, want.UpdatedAt = j.Version+1, now
	s.applied(t, "succeed by ref", got, err, want)
	ref.Key = "changed by the caller"
	if r := s.get(t, j.ID).ResultRef; r == nil || r.Key != key {
		t.Fatalf("the caller's ref changed the stored record: %+v", r)
	}
	peeked, err := s.store.Peek(t.Context(), j.ID)
	if err != nil || peeked.ResultRef == nil || *peeked.ResultRef != (job.Payload{Key: key, Size: 1 << 20, SHA256: "sha256:ab"}) {
		t.Fatalf("peek: ref %+v, %v; want the stored one", peeked.ResultRef, err)
	}

	again := s.create(t, attempt(now), func(j *job.Job) {
		j.ResultRef = &job.Payload{Key: "results/old/attempt", Size: 9, SHA256: "sha256:00"}
	})
	done, err := s.store.Succeed(t.Context(), job.Succeed{ID: again.ID, Owner: "me", Now: now, Result: json.RawMessage(`{"output":"small"}`), ExpiresAt: keep})
	if err != nil || done.ResultRef != nil || string(done.Result) != `{"output":"small"}` {
		t.Fatalf("an inline success over an old ref: ref %+v, result %s, %v", done.ResultRef, done.Result, err)
	}
	if st := s.get(t, again.ID); st.ResultRef != nil {
		t.Fatalf("stored: a stale ref %+v beside the inline result", st.ResultRef)
	}
}
