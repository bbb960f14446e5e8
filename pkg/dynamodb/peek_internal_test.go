package dynamodb

import (
	"encoding/json"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/aijobs/aijobs/pkg/job"
)

// TestPeekAttributesAreJobPeeked: the projection a poll reads
// (peekAttributes) keeps exactly what job.Peeked keeps of a record, so the
// domain's statement of a peek is the one DynamoDB answers. The record
// has every field set (checked), so a field added to job.Job that the
// projection drops, or keeps against Peeked, fails here.
func TestPeekAttributesAreJobPeeked(t *testing.T) {
	j := everyFieldSet(t)
	got, want := projected(t, j, peekAttributes), job.Peeked(decodedJob(t, j))
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("the projection is not job.Peeked:\n got  %+v\n want %+v", got, want)
	}
}

// TestTheCreatedIndexHoldsJobSummary: what the created index projects
// (and Recent reads of a job outside it) is exactly job.Summary, so Recent
// answers the same from DynamoDB as from memory, and no attribute a
// heartbeat writes is in it (a heartbeat would then write the index too).
func TestTheCreatedIndexHoldsJobSummary(t *testing.T) {
	j := everyFieldSet(t)
	attrs := append([]string{aID, aCreated}, CreatedProjection...)
	got, want := projected(t, j, attrs), job.Summary(decodedJob(t, j))
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("the created index is not job.Summary:\n got  %+v\n want %+v", got, want)
	}
	for _, a := range attrs {
		if slices.Contains([]string{aLeaseUntil, aProgress, aUpdated, aVersion}, a) {
			t.Errorf("the created index holds %s, which every heartbeat writes", a)
		}
	}
}

// everyFieldSet is a record with every field set (checked), so a field
// added to job.Job that a projection drops, or keeps against the domain,
// fails the tests above.
func everyFieldSet(t *testing.T) job.Job {
	t.Helper()
	at := time.Date(2026, 12, 4, 5, 6, 7, 8_000_000, time.UTC)
	j := job.Job{
		ID: job.NewID("t", "k"), Tenant: "t", RequestKey: "k", InputHash: "sha256:ab", Model: "default",
		Input: json.RawMessage(`{"messages":[]}`), Metadata: json.RawMessage(`{"m":1}`),
		InputRef: &job.Payload{Key: "inputs/j/ab", Size: 9000, SHA256: "sha256:cd"},
		State:    job.Running, Attempts: 2, MaxAttempts: 5, Budget: job.Cents(50), Cost: job.Cents(3), CostEstimated: true,
		Saved: -job.Cents(1), Lanes: []job.Lane{job.Priority, job.Flex}, AttemptLanes: []job.AttemptLane{{Attempt: 1, Lane: job.Flex}, {Attempt: 2, Lane: job.Standard}},
		Reserve: job.Cents(2), Held: job.Cents(4), WrittenOff: []string{"w_old"}, SpendFirst: job.SpendFirstOf("d", at, "w_now"),
		Pending: &job.Pending{Owner: "w_old", Provider: "openai", Model: "m", ID: "resp_1", Held: job.Cents(4)}, Deadline: at.Add(time.Hour),
		RunTime: 1500 * time.Millisecond, LeaseOwner: "w_now", LeaseUntil: at.Add(time.Minute), NotBefore: at.Add(time.Second),
		ErrorClass: job.RateLimited, ErrorDetail: "429", Result: json.RawMessage(`{"output":"x"}`), ResultModel: "fake/m", ResultLane: job.Flex,
		ResultRef: &job.Payload{Key: "results/j/w_now", Size: 1 << 20, SHA256: "sha256:cd"},
		Progress:  0.5, Replays: 1, ReplayedAt: at.Add(-time.Hour), Nudges: 2,
		Enlisted: job.LaneKey("default", 1), EnlistedAt: at.Add(-time.Minute), Batch: "b1",
		Callback:   job.Callback{URL: "https://hooks.example.com/a", Events: []job.State{job.Succeeded}},
		Deliveries: job.Deliveries{Attempts: 1, LastStatus: 200, DeliveredAt: at, DeliveredVersion: 3},
		Version:    4, CreatedAt: at.Add(-2 * time.Hour), UpdatedAt: at, ExpiresAt: at.Add(24 * time.Hour),
	}
	if z := zeroFields(reflect.ValueOf(j), "Job"); len(z) > 0 {
		t.Fatalf("the record leaves fields unset, so the test would not see them: %v", z)
	}
	return j
}

// decodedJob is j as the table holds it, decoded whole.
func decodedJob(t *testing.T, j job.Job) job.Job {
	t.Helper()
	full, err := fromItem(toItem(j, indexes{activeShards: 1, createdShards: 1}))
	if err != nil {
		t.Fatal(err)
	}
	return full
}

// projected is j's item with only attrs kept, decoded.
func projected(t *testing.T, j job.Job, attrs []string) job.Job {
	t.Helper()
	item := toItem(j, indexes{activeShards: 1, createdShards: 1})
	for name := range item {
		if !slices.Contains(attrs, name) {
			delete(item, name)
		}
	}
	got, err := fromItem(item)
	if err != nil {
		t.Fatalf("the projected item does not decode: %v", err)
	}
	return got
}

// zeroFields names the zero-valued fields of v (a struct), nested ones
// by path.
func zeroFields(v reflect.Value, path string) []string {
	var out []string
	for i := range v.NumField() {
		f, name := v.Field(i), path+"."+v.Type().Field(i).Name
		switch {
		case f.Kind() == reflect.Struct && f.Type() != reflect.TypeOf(time.Time{}):
			out = append(out, zeroFields(f, name)...)
		case f.IsZero():
			out = append(out, name)
		}
	}
	return out
}
