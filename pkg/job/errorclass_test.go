package job_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/aijobs/aijobs/pkg/job"
)

// designClasses is the table of docs/errors.md ("Job error
// classes"), in its order.
var designClasses = []struct {
	class     job.ErrorClass
	name      string
	retryable bool
	final     job.State
}{
	{job.RateLimited, "rate_limited", true, job.Failed},
	{job.Overloaded, "overloaded", true, job.Failed},
	{job.CapacityUnavailable, "capacity_unavailable", true, job.Failed},
	{job.Timeout, "timeout", true, job.Failed},
	{job.ProviderError, "provider_error", true, job.Failed},
	{job.Network, "network", true, job.Failed},
	{job.InvalidOutput, "invalid_output", true, job.Failed},
	{job.ContextLengthExceeded, "context_length_exceeded", false, job.Failed},
	{job.ContentFiltered, "content_filtered", false, job.Failed},
	{job.InvalidRequest, "invalid_request", false, job.Failed},
	{job.Auth, "auth", false, job.Failed},
	{job.QuotaExhausted, "quota_exhausted", false, job.Failed},
	{job.DeadlineExceeded, "deadline_exceeded", false, job.Abandoned},
	{job.BudgetExhausted, "budget_exhausted", false, job.Abandoned},
	{job.SpendLimit, "spend_limit", false, job.Abandoned},
	{job.Cancelled, "cancelled", false, job.Abandoned},
	{job.DeadLettered, "dead_lettered", false, job.Failed}, // only via replay
	{job.Internal, "internal", true, job.Failed},
}

func TestErrorClassTable(t *testing.T) {
	for _, tt := range designClasses {
		t.Run(tt.name, func(t *testing.T) {
			if string(tt.class) != tt.name {
				t.Errorf("wire name %q, want %q", tt.class, tt.name)
			}
			if !tt.class.Valid() {
				t.Error("not Valid")
			}
			if got := tt.class.Retryable(); got != tt.retryable {
				t.Errorf("Retryable() = %v, want %v", got, tt.retryable)
			}
			if got := tt.class.FinalState(); got != tt.final {
				t.Errorf("FinalState() = %s, want %s", got, tt.final)
			}
		})
	}
}

func TestClassesListsEachOnceInDesignOrder(t *testing.T) {
	got := job.Classes()
	if len(got) != len(designClasses) {
		t.Fatalf("Classes() has %d entries, the design table %d", len(got), len(designClasses))
	}
	seen := map[job.ErrorClass]bool{}
	for i, c := range got {
		if seen[c] {
			t.Errorf("%s listed twice", c)
		}
		seen[c] = true
		if c != designClasses[i].class {
			t.Errorf("Classes()[%d] = %s, want %s", i, c, designClasses[i].class)
		}
		if !c.Valid() {
			t.Errorf("%s listed but not Valid", c)
		}
	}
}

func TestUnknownClassBehavesLikeInternal(t *testing.T) {
	for _, c := range []job.ErrorClass{"", "RATE_LIMITED", "teapot", "internal "} {
		if c.Valid() {
			t.Errorf("%q is Valid", c)
		}
		if c.Retryable() != job.Internal.Retryable() || c.FinalState() != job.Internal.FinalState() {
			t.Errorf("%q: retryable %v final %s; want internal's %v %s", c, c.Retryable(), c.FinalState(),
				job.Internal.Retryable(), job.Internal.FinalState())
		}
	}
}

func TestState(t *testing.T) {
	tests := []struct {
		s               job.State
		valid, terminal bool
	}{
		{job.Queued, true, false},
		{job.Running, true, false},
		{job.Succeeded, true, true},
		{job.Failed, true, true},
		{job.Abandoned, true, true},
		{"", false, false},
		{"QUEUED", false, false},
		{"cancelled", false, false},
	}
	for _, tt := range tests {
		if got := tt.s.Valid(); got != tt.valid {
			t.Errorf("%q.Valid() = %v, want %v", tt.s, got, tt.valid)
		}
		if got := tt.s.Terminal(); got != tt.terminal {
			t.Errorf("%q.Terminal() = %v, want %v", tt.s, got, tt.terminal)
		}
	}
	// Every class's final state is terminal.
	for _, c := range job.Classes() {
		if !c.FinalState().Terminal() {
			t.Errorf("%s ends in non-terminal %s", c, c.FinalState())
		}
	}
}

func TestErrorHelpers(t *testing.T) {
	rec := &job.Job{ID: "job_x", Version: 3}
	conflict := &job.Error{Code: job.CodeConflict, Job: rec}
	tests := []struct {
		name     string
		err      error
		code     job.Code
		conflict bool
	}{
		{"nil", nil, "", false},
		{"plain", errors.New("boom"), job.CodeInternal, false},
		{"typed", job.Errorf(job.CodeNotFound, "no job %s", "x"), job.CodeNotFound, false},
		{"wrapped", fmt.Errorf("store: %w", job.Errorf(job.CodeTooLarge, "too large")), job.CodeTooLarge, false},
		{"conflict", fmt.Errorf("claim: %w", conflict), job.CodeConflict, true},
		{"conflict without job", &job.Error{Code: job.CodeConflict}, job.CodeConflict, false},
	}
	for _, tt := range tests {
		if got := job.ErrorCode(tt.err); got != tt.code {
			t.Errorf("%s: ErrorCode = %q, want %q", tt.name, got, tt.code)
		}
		j, ok := job.ConflictJob(tt.err)
		if ok != tt.conflict || (ok && j.Version != 3) {
			t.Errorf("%s: ConflictJob = %+v, %v", tt.name, j, ok)
		}
	}
	cause := errors.New("dynamodb: throttled")
	e := &job.Error{Code: job.CodeUnavailable, Message: "try again", Err: cause}
	if e.Error() != "unavailable: try again: dynamodb: throttled" || !errors.Is(e, cause) {
		t.Errorf("Error() = %q, Is(cause) = %v", e.Error(), errors.Is(e, cause))
	}
}
