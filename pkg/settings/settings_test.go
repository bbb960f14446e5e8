package settings_test

import (
	"strings"
	"testing"
	"time"

	"github.com/aijobs/aijobs/pkg/settings"
)

func TestDefaultsValidate(t *testing.T) {
	if err := settings.Defaults().Validate(); err != nil {
		t.Fatalf("Defaults().Validate() = %v", err)
	}
}

func TestValidateRefuses(t *testing.T) {
	tests := []struct {
		name   string
		change func(*settings.Settings)
		want   string // a phrase naming the broken rule
	}{
		{"empty prefix", func(s *settings.Settings) { s.Prefix = "" }, "prefix is empty"},
		{"notifier no longer than a delivery", func(s *settings.Settings) { s.NotifierTimeout = s.CallbackTimeout }, "notifier timeout"},
		{"callback backoff above SQS's 12h visibility", func(s *settings.Settings) { s.CallbackRetryMax = 12*time.Hour + time.Second }, "12h visibility"},
		{"no callback attempt", func(s *settings.Settings) { s.CallbackAttempts = 0 }, "callback attempts"},
		{"callback batch of 11", func(s *settings.Settings) { s.CallbackBatchSize = 11 }, "callback batch size"},
		{"notices outlive by their queue", func(s *settings.Settings) { s.CallbackAttempts = 40 }, "queue retention"},
		{"visibility below worker timeout", func(s *settings.Settings) { s.VisibilityTimeout = s.WorkerTimeout - time.Second }, "visibility timeout"},
		{"visibility misses the batching window", func(s *settings.Settings) { s.VisibilityTimeout = s.WorkerTimeout + s.BatchWindow - time.Second }, "batching window"},
		{"attempt + margin over worker timeout", func(s *settings.Settings) {
			s.RouteTimeout = s.WorkerTimeout - s.AttemptMargin - s.LambdaMargin + time.Second
		}, "attempt timeout"},
		{"lambda margin too big", func(s *settings.Settings) { s.LambdaMargin = s.WorkerTimeout }, "lambda margin"},
		{"max receive count = 2x max attempts", func(s *settings.Settings) { s.MaxReceiveCount = 2 * s.Limits.MaxMaxAttempts }, "max receive count"},
		{"max receive count below max attempts", func(s *settings.Settings) { s.MaxReceiveCount = s.Limits.MaxMaxAttempts }, "max receive count"},
		{"more max attempts than receives allow", func(s *settings.Settings) { s.Limits.MaxMaxAttempts = s.MaxReceiveCount / 2 }, "max receive count"},
		{"DLQ retention = queue retention", func(s *settings.Settings) { s.DLQRetention = s.QueueRetention }, "DLQ retention"},
		{"DLQ retention < queue retention", func(s *settings.Settings) { s.DLQRetention = s.QueueRetention - time.Hour }, "DLQ retention"},
		{"lease TTL < 2 heartbeats", func(s *settings.Settings) { s.LeaseTTL = 2*s.Heartbeat - time.Millisecond }, "lease TTL"},
		{"lease TTL < margin + 2 heartbeats", func(s *settings.Settings) { s.LeaseTTL = 3*s.Heartbeat - time.Millisecond }, "lease margin"},
		{"lease margin beyond the attempt margin", func(s *settings.Settings) { s.LeaseMargin = s.AttemptMargin + time.Second }, "attempt margin"},
		{"no resend quota", func(s *settings.Settings) { s.ReconcileResendMax = 0 }, "resend max"},
		{"no AWS call timeout", func(s *settings.Settings) { s.AWSCallTimeout = 0 }, "AWS call timeout"},
		{"explicit margin too long", func(s *settings.Settings) { s.LeaseMargin = s.LeaseTTL - 2*s.Heartbeat + time.Millisecond }, "lease margin"},
		{"no heartbeat", func(s *settings.Settings) { s.Heartbeat = 0 }, "lease TTL"},
		{"no route timeout", func(s *settings.Settings) { s.RouteTimeout = 0 }, "route timeout"},
		{"active shards 0", func(s *settings.Settings) { s.ActiveShards = 0 }, "active shards"},
		{"tenant shards 0", func(s *settings.Settings) { s.TenantShards = 0 }, "tenant shards"},
		{"reconcile every 30s", func(s *settings.Settings) { s.ReconcileEvery = 30 * time.Second }, "reconcile every"},
		{"reconcile after one lease", func(s *settings.Settings) { s.ReconcileAfter = s.LeaseTTL }, "reconcile after"},
		{"reconcile after less than a period", func(s *settings.Settings) { s.ReconcileAfter = s.ReconcileEvery - time.Second }, "reconcile after"},
		{"reconciler timeout 5s", func(s *settings.Settings) { s.ReconcilerTimeout = 5 * time.Second }, "reconciler timeout"},
		{"collector timeout 5s", func(s *settings.Settings) { s.CollectorTimeout = 5 * time.Second }, "collector timeout"},
		{"batch size 0", func(s *settings.Settings) { s.BatchSize = 0 }, "batch size 0"},
		{"batch size 11", func(s *settings.Settings) { s.BatchSize = 11 }, "batch size 11"},
		{"max concurrency 1", func(s *settings.Settings) { s.MaxConcurrency = 1 }, "maximum concurrency 1"},
		{"failure shards 0", func(s *settings.Settings) { s.FailureShards = 0 }, "failure shards"},
		{"backoff base 0", func(s *settings.Settings) { s.BackoffBase = 0 }, "backoff"},
		{"backoff max < base", func(s *settings.Settings) { s.BackoffMax = s.BackoffBase - 1 }, "backoff"},
		{"no succeeded retention", func(s *settings.Settings) { s.Retention.Succeeded = 0 }, "retention"},
		{"failed kept shorter than succeeded", func(s *settings.Settings) { s.Retention.Failed = s.Retention.Succeeded - time.Hour }, "retention"},
		{"default attempts above max", func(s *settings.Settings) { s.Limits.DefaultMaxAttempts = s.Limits.MaxMaxAttempts + 1 }, "default max attempts"},
		{"default attempts 0", func(s *settings.Settings) { s.Limits.DefaultMaxAttempts = 0 }, "default max attempts"},
		{"default deadline above max", func(s *settings.Settings) { s.Limits.DefaultDeadline = s.Limits.MaxDeadline + time.Second }, "default deadline"},
		{"default deadline below 1s", func(s *settings.Settings) { s.Limits.DefaultDeadline = time.Second - 1 }, "default deadline"},
		{"default budget above max", func(s *settings.Settings) { s.Limits.DefaultBudget = s.Limits.MaxBudget + 1 }, "default budget"},
		{"default budget 0", func(s *settings.Settings) { s.Limits.DefaultBudget = 0 }, "default budget"},
		{"default max tokens above max", func(s *settings.Settings) { s.Limits.DefaultMaxTokens = s.Limits.MaxMaxTokens + 1 }, "default max tokens"},
		{"default max tokens 0", func(s *settings.Settings) { s.Limits.DefaultMaxTokens = 0 }, "default max tokens"},
		{"no messages allowed", func(s *settings.Settings) { s.Limits.MaxMessages = 0 }, "max messages"},
		{"default model not routable", func(s *settings.Settings) { s.Limits.DefaultModel = "other" }, "default model"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := settings.Defaults()
			tt.change(&s)
			err := s.Validate()
			if err == nil {
				t.Fatal("Validate() = nil")
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Validate() = %q, want it to name %q", err, tt.want)
			}
		})
	}
}

// The boundaries of each timing rule are accepted.
func TestValidateBoundaries(t *testing.T) {
	tests := []struct {
		name   string
		change func(*settings.Settings)
	}{
		{"visibility = worker timeout + window", func(s *settings.Settings) { s.VisibilityTimeout = s.WorkerTimeout + s.BatchWindow }},
		{"attempt + margin = worker timeout", func(s *settings.Settings) { s.RouteTimeout = s.WorkerTimeout - s.AttemptMargin - s.LambdaMargin }},
		{"max receive count = 2x max attempts + 1", func(s *settings.Settings) { s.MaxReceiveCount = 2*s.Limits.MaxMaxAttempts + 1 }},
		{"DLQ retention = queue retention + 1s", func(s *settings.Settings) { s.DLQRetention = s.QueueRetention + time.Second }},
		{"lease TTL = margin + 2 heartbeats", func(s *settings.Settings) { s.LeaseTTL = s.GuardMargin() + 2*s.Heartbeat }},
		{"lease TTL = 2 heartbeats, margin 1 ms", func(s *settings.Settings) {
			s.LeaseTTL, s.LeaseMargin = 2*s.Heartbeat+time.Millisecond, time.Millisecond
		}},
		{"batch size 1", func(s *settings.Settings) { s.BatchSize = 1 }},
		{"batch size 10", func(s *settings.Settings) { s.BatchSize = 10 }},
		{"max concurrency 2", func(s *settings.Settings) { s.MaxConcurrency = 2 }},
		{"defaults equal to their limits", func(s *settings.Settings) {
			l := &s.Limits
			l.DefaultMaxAttempts, l.DefaultDeadline, l.DefaultBudget, l.DefaultMaxTokens = l.MaxMaxAttempts, l.MaxDeadline, l.MaxBudget, l.MaxMaxTokens
		}},
		{"equal retentions", func(s *settings.Settings) { s.Retention.Failed = s.Retention.Succeeded }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := settings.Defaults()
			tt.change(&s)
			if err := s.Validate(); err != nil {
				t.Errorf("Validate() = %v", err)
			}
		})
	}
}

func TestValidateReportsEveryViolation(t *testing.T) {
	s := settings.Defaults()
	s.BatchSize, s.MaxConcurrency, s.Prefix = 0, 1, ""
	err := s.Validate()
	if err == nil {
		t.Fatal("Validate() = nil")
	}
	for _, want := range []string{"prefix is empty", "batch size 0", "maximum concurrency 1"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Validate() = %q, missing %q", err, want)
		}
	}
	if n := strings.Count(err.Error(), "; "); n != 2 {
		t.Errorf("Validate() = %q: want 3 violations separated by \"; \"", err)
	}
}

// The rules only AWS needs (throttling alone must never cost a message a
// receive) are refused for a deployment, and only there: the dev server's
// tests run with visibility timeouts of seconds. A deployment also keeps
// every rule of Validate.
func TestValidateDeployment(t *testing.T) {
	refused := []struct {
		name   string
		change func(*settings.Settings)
		want   string
	}{
		{"visibility below 6x worker timeout", func(s *settings.Settings) { s.VisibilityTimeout = 6*s.WorkerTimeout - time.Second }, "6 x worker timeout"},
		{"visibility 6x worker timeout without the window", func(s *settings.Settings) { s.VisibilityTimeout = 6 * s.WorkerTimeout }, "6 x worker timeout"},
		{"longer worker timeout, visibility kept", func(s *settings.Settings) { s.WorkerTimeout += time.Second }, "6 x worker timeout"},
		{"reserved concurrency below max concurrency", func(s *settings.Settings) { s.WorkerReservedConcurrency = s.MaxConcurrency - 1 }, "reserved concurrency"},
		{"max concurrency raised above the reservation", func(s *settings.Settings) {
			s.WorkerReservedConcurrency = s.MaxConcurrency
			s.MaxConcurrency++
		}, "reserved concurrency"},
		{"a rule of Validate", func(s *settings.Settings) { s.Prefix = "" }, "prefix is empty"},
		{"callbacks retried for less than a day", func(s *settings.Settings) { s.CallbackAttempts-- }, "under a day"},
		{"loopback callbacks", func(s *settings.Settings) { s.CallbackLoopback = true }, "loopback"},
	}
	for _, tt := range refused {
		t.Run(tt.name, func(t *testing.T) {
			s := settings.Defaults()
			tt.change(&s)
			err := s.ValidateDeployment()
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("ValidateDeployment() = %v, want it to name %q", err, tt.want)
			}
			if strings.Count(err.Error(), "settings: ") != 1 {
				t.Errorf("ValidateDeployment() = %q: one prefix", err)
			}
			if tt.name != "a rule of Validate" {
				if err := s.Validate(); err != nil {
					t.Errorf("Validate() = %v: a local run does not need this rule", err)
				}
			}
		})
	}
	accepted := []struct {
		name   string
		change func(*settings.Settings)
	}{
		{"the defaults", func(*settings.Settings) {}},
		{"visibility = 6 x worker timeout + window", func(s *settings.Settings) { s.VisibilityTimeout = 6*s.WorkerTimeout + s.BatchWindow }},
		{"reserved concurrency = max concurrency", func(s *settings.Settings) { s.WorkerReservedConcurrency = s.MaxConcurrency }},
		{"no reserved concurrency given: it follows max concurrency", func(s *settings.Settings) {
			s.WorkerReservedConcurrency = 0
			s.MaxConcurrency = 50
		}},
	}
	for _, tt := range accepted {
		t.Run(tt.name, func(t *testing.T) {
			s := settings.Defaults()
			tt.change(&s)
			if err := s.ValidateDeployment(); err != nil {
				t.Errorf("ValidateDeployment() = %v", err)
			}
		})
	}
}

// Throttling alone must never cost a message a receive: the shipped queue
// keeps a batch hidden six worker timeouts (AWS's rule, so Lambda can retry
// a throttled invocation) and the worker reserves what its event source
// mapping may use.
func TestDefaultsAbsorbThrottling(t *testing.T) {
	s := settings.Defaults()
	if s.VisibilityTimeout < 6*s.WorkerTimeout+s.BatchWindow {
		t.Errorf("visibility %s < 6 x %s + %s", s.VisibilityTimeout, s.WorkerTimeout, s.BatchWindow)
	}
	if s.ReservedConcurrency() < s.MaxConcurrency {
		t.Errorf("reserved concurrency %d < maximum concurrency %d", s.ReservedConcurrency(), s.MaxConcurrency)
	}
}

func TestReservedConcurrency(t *testing.T) {
	s := settings.Defaults()
	s.MaxConcurrency = 25
	if got := s.ReservedConcurrency(); got != 25 {
		t.Errorf("unset reservation: %d, want the maximum concurrency 25", got)
	}
	s.WorkerReservedConcurrency = 40
	if got := s.ReservedConcurrency(); got != 40 {
		t.Errorf("reservation 40: %d", got)
	}
}

// The price of the long visibility timeout: a worker that dies after its
// claim but before its first heartbeat (which is what shortens the
// message's visibility to the lease) leaves its message hidden for the
// whole visibility timeout. The reconciler brings the job back first: it
// re-sends a running job whose lease expired ReconcileAfter ago at its next
// run. With the shipped numbers that is 30s + 10m + 5m = 15m30s, before the
// message's own return at 18m02s.
func TestDeadWorkerRecovery(t *testing.T) {
	s := settings.Defaults()
	if err := s.ValidateDeployment(); err != nil {
		t.Fatal(err)
	}
	reconciler := s.LeaseTTL + s.ReconcileAfter + s.ReconcileEvery
	if got := s.DeadWorkerRecovery(); got != reconciler || got != 15*time.Minute+30*time.Second {
		t.Errorf("DeadWorkerRecovery() = %s, want the reconciler's bound %s (15m30s)", got, reconciler)
	}
	if s.DeadWorkerRecovery() >= s.VisibilityTimeout {
		t.Errorf("recovery %s is not before the message returns (%s)", s.DeadWorkerRecovery(), s.VisibilityTimeout)
	}
	// A deployment with a short worker timeout has a short visibility
	// timeout too; then the message's return is the bound.
	s.WorkerTimeout, s.RouteTimeout, s.VisibilityTimeout = 60*time.Second, 30*time.Second, 6*60*time.Second+s.BatchWindow
	if err := s.ValidateDeployment(); err != nil {
		t.Fatal(err)
	}
	if got := s.DeadWorkerRecovery(); got != s.VisibilityTimeout {
		t.Errorf("DeadWorkerRecovery() = %s, want the visibility timeout %s", got, s.VisibilityTimeout)
	}
}

func TestAttemptTimeout(t *testing.T) {
	s := settings.Defaults()
	s.RouteTimeout, s.AttemptMargin = 370*time.Second, 10*time.Second
	if got := s.AttemptTimeout(); got != 380*time.Second {
		t.Errorf("AttemptTimeout() = %s, want 380s", got)
	}
}

func TestResourceNames(t *testing.T) {
	tests := []struct {
		prefix, table, queue, dlq string
	}{
		{"aijobs", "aijobs-jobs", "aijobs-jobs", "aijobs-jobs-dlq"},
		{"test-42", "test-42-jobs", "test-42-jobs", "test-42-jobs-dlq"},
	}
	for _, tt := range tests {
		s := settings.Defaults()
		s.Prefix = tt.prefix
		if s.TableName() != tt.table || s.QueueName() != tt.queue || s.DLQName() != tt.dlq {
			t.Errorf("prefix %q: %s %s %s", tt.prefix, s.TableName(), s.QueueName(), s.DLQName())
		}
	}
	if d := settings.Defaults(); d.Prefix != "aijobs" || d.FailureIndex == "" {
		t.Errorf("defaults: prefix %q, failure index %q", d.Prefix, d.FailureIndex)
	}
}

// Standard Webhooks recommends retrying over days; aijobs promises at
// least one. CallbackSpan counts the least jitter, so every run of the
// shipped schedule lasts at least a day, and it is the least that does.
func TestTheCallbackScheduleSpansADayWithTheDefaults(t *testing.T) {
	s := settings.Defaults()
	if s.CallbackSpan() < 24*time.Hour {
		t.Fatalf("span %v", s.CallbackSpan())
	}
	s.CallbackAttempts--
	if s.CallbackSpan() >= 24*time.Hour {
		t.Fatalf("one attempt fewer still spans %v: the default is not the least that does", s.CallbackSpan())
	}
}
