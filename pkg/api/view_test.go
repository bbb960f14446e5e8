package api

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
