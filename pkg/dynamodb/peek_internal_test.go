package dynamodb

import (
	"encoding/json"
	"reflect"
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
	at := time.Date(2026, 12, 4, 5, 6, 7, 8_000_000, time.UTC)
	j := job.Job{
		ID: job.NewID("t", "k"), Tenant: "t", RequestKey: "k", InputHash: "sha256:ab", Model: "default",
		Input: json.RawMessage(`{"messages":[]}`), Metadata: json.RawMessage(`{"m":1}`),
		State: job.Running, Attempts: 2, MaxAttempts: 5, Budget: job.Cents(50), Cost: job.Cents(3), CostEstimated: true,
		Reserve: job.Cents(2), Held: job.Cents(4), WrittenOff: []string{"w_old"}, Deadline: at.Add(time.Hour),
		RunTime: 1500 * time.Millisecond, LeaseOwner: "w_now", LeaseUntil: at.Add(time.Minute), NotBefore: at.Add(time.Second),
		ErrorClass: job.RateLimited, ErrorDetail: "429", Result: json.RawMessage(`{"output":"x"}`), ResultModel: "fake/m",
		Progress: 0.5, Replays: 1, ReplayedAt: at.Add(-time.Hour), Nudges: 2,
		Callback:   job.Callback{URL: "https://hooks.example.com/a", Events: []job.State{job.Succeeded}},
		Deliveries: job.Deliveries{Attempts: 1, LastStatus: 200, DeliveredAt: at, DeliveredVersion: 3},
		Version:    4, CreatedAt: at.Add(-2 * time.Hour), UpdatedAt: at, ExpiresAt: at.Add(24 * time.Hour),
	}
	if z := zeroFields(reflect.ValueOf(j), "Job"); len(z) > 0 {
		t.Fatalf("the record leaves fields unset, so the test would not see them: %v", z)
	}
	full, err := fromItem(toItem(j, 1))
	if err != nil {
		t.Fatal(err)
	}
	item := toItem(j, 1)
	for name := range item {
		keep := false
		for _, a := range peekAttributes {
			keep = keep || a == name
		}
		if !keep {
			delete(item, name)
		}
	}
	got, err := fromItem(item)
	if err != nil {
		t.Fatalf("the projected item does not decode: %v", err)
	}
	if want := job.Peeked(full); !reflect.DeepEqual(got, want) {
		t.Fatalf("the projection is not job.Peeked:\n got  %+v\n want %+v", got, want)
	}
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
