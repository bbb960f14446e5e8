package client_test

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/aijobs/aijobs/pkg/api"
	"github.com/aijobs/aijobs/pkg/client"
	"github.com/aijobs/aijobs/pkg/job"
)

// The client's View must read every member of the server's view and write
// it back byte for byte: a field added to api.View without one here fails.
func TestViewMirrorsTheServersJSON(t *testing.T) {
	at := time.Date(2026, 12, 2, 10, 0, 0, 120_000_000, time.UTC)
	class := job.RateLimited
	jobs := map[string]job.Job{
		"running with an error class": {
			ID: job.NewID("t", "k"), Tenant: "t", RequestKey: "k", InputHash: "sha256:00ff", Model: "default",
			State: job.Running, Attempts: 2, MaxAttempts: 4, Progress: 0.4, Cost: 420_000_001, Budget: job.Cents(50),
			ErrorClass: class, Version: 5, CreatedAt: at, UpdatedAt: at.Add(1500 * time.Millisecond), Deadline: at.Add(15 * time.Minute),
		},
		"succeeded with result and metadata": {
			ID: job.NewID("t", "k2"), Tenant: "t", RequestKey: "k2", InputHash: "sha256:11", Model: "default",
			State: job.Succeeded, Attempts: 1, MaxAttempts: 1, Progress: 1, Cost: job.Cents(12345), CostEstimated: true, Budget: job.Cents(10_000) + 1,
			Result: json.RawMessage(`{"output":"é \u2028 <b>","usage":{"input_tokens":1}}`), ResultModel: "gpt-4o-mini",
			Metadata: json.RawMessage(`{"ticket":"OPS-1"}`), Version: 3, CreatedAt: at, UpdatedAt: at, Deadline: at,
		},
	}
	for name, j := range jobs {
		t.Run(name, func(t *testing.T) {
			server, err := json.Marshal(api.NewView(j))
			if err != nil {
				t.Fatal(err)
			}
			var v client.View
			if err := json.Unmarshal(server, &v); err != nil {
				t.Fatalf("decode %s: %v", server, err)
			}
			back, err := json.Marshal(v)
			if err != nil {
				t.Fatal(err)
			}
			if string(back) != string(server) {
				t.Errorf("round trip differs\nserver %s\nclient %s", server, back)
			}
			if (v.Result == nil) != (j.Result == nil) || (v.Metadata == nil) != (j.Metadata == nil) {
				t.Errorf("result %q / metadata %q: null must read as nil", v.Result, v.Metadata)
			}
			if v.CostCents != j.Cost || v.BudgetCents != j.Budget || !v.UpdatedAt.Equal(j.UpdatedAt) {
				t.Errorf("view = %+v", v)
			}
		})
	}

	tags := func(typ reflect.Type) map[string]bool {
		m := map[string]bool{}
		for i := range typ.NumField() {
			m[typ.Field(i).Tag.Get("json")] = true
		}
		return m
	}
	server, mine := tags(reflect.TypeFor[api.View]()), tags(reflect.TypeFor[client.View]())
	if !reflect.DeepEqual(server, mine) {
		t.Errorf("json tags differ\nserver %v\nclient %v", server, mine)
	}
}
