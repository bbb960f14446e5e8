package wire

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/aijobs/aijobs/pkg/job"
)

func TestViewShape(t *testing.T) {
	at := time.Date(2026, 3, 4, 5, 6, 7, 891_234_567, time.FixedZone("CET", 3600))
	j := job.Job{
		ID: "job_x", Tenant: "secret-tenant", RequestKey: "k", InputHash: "sha256:ab", Model: "default",
		Input: json.RawMessage(`{"messages":[{"role":"user","content":"secret-input"}]}`),
		State: job.Running, Attempts: 1, MaxAttempts: 4, Budget: job.Cents(50), Cost: 1,
		LeaseOwner: "secret-owner", LeaseUntil: at, ErrorDetail: "secret-detail",
		Progress: math.NaN(), Version: 7, CreatedAt: at, UpdatedAt: at, Deadline: at,
		Metadata: json.RawMessage(`null`),
	}
	b, err := json.Marshal(NewView(j))
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	for _, want := range []string{`"cost_cents":0.000000001,`, `"progress":0,`, `"result":null`, `"error_class":null`,
		`"created_at":"2026-03-04T04:06:07.891Z"`, `"version":7`} {
		if !strings.Contains(s, want) {
			t.Errorf("view lacks %s: %s", want, s)
		}
	}
	for _, leak := range []string{"secret", "metadata", "result_model", "lease", "tenant"} {
		if strings.Contains(s, leak) {
			t.Errorf("view holds %q: %s", leak, s)
		}
	}
	j.State, j.ErrorClass, j.Progress = job.Succeeded, job.Timeout, 3
	if v := NewView(j); v.ErrorClass != nil || v.Progress != 1 {
		t.Errorf("succeeded view: error_class %v, progress %v", v.ErrorClass, v.Progress)
	}
}

// A view read back by a client (pkg/client decodes this same type) and
// written again is the server's JSON byte for byte, with a null result
// or metadata read as nil.
func TestViewRoundTrips(t *testing.T) {
	at := time.Date(2026, 12, 2, 10, 0, 0, 120_000_000, time.UTC)
	jobs := map[string]job.Job{
		"running with an error class": {
			ID: job.NewID("t", "k"), Tenant: "t", RequestKey: "k", InputHash: "sha256:00ff", Model: "default",
			State: job.Running, Attempts: 2, MaxAttempts: 4, Progress: 0.4, Cost: 420_000_001, Budget: job.Cents(50),
			ErrorClass: job.RateLimited, Version: 5, CreatedAt: at, UpdatedAt: at.Add(1500 * time.Millisecond), Deadline: at.Add(15 * time.Minute),
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
			server, err := json.Marshal(NewView(j))
			if err != nil {
				t.Fatal(err)
			}
			var v View
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
}
