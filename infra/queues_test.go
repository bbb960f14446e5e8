package main

import (
	"testing"
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/jsii-runtime-go"

	"github.com/aijobs/aijobs/pkg/settings"
)

func TestQueues(t *testing.T) {
	s := defaults(t)
	st := settings.Defaults()
	_, jobs := s.one(t, "AWS::SQS::Queue", named("QueueName", st.QueueName()))
	dlqID, dlq := s.one(t, "AWS::SQS::Queue", named("QueueName", st.DLQName()))
	for name, q := range map[string]map[string]any{"job queue": jobs, "DLQ": dlq} {
		if q["SqsManagedSseEnabled"] != true {
			t.Errorf("%s is not encrypted: %v", name, q)
		}
	}
	if got := num(t, jobs["VisibilityTimeout"], "VisibilityTimeout"); got != st.VisibilityTimeout.Seconds() {
		t.Errorf("visibility %v, settings say %v", got, st.VisibilityTimeout.Seconds())
	}
	if got := num(t, jobs["MessageRetentionPeriod"], "retention"); got != st.QueueRetention.Seconds() {
		t.Errorf("queue retention %v, settings say %v", got, st.QueueRetention.Seconds())
	}
	if got := num(t, dlq["MessageRetentionPeriod"], "DLQ retention"); got != (14 * 24 * time.Hour).Seconds() {
		t.Errorf("DLQ retention %v, want 14 days", got)
	}
	redrive := jobs["RedrivePolicy"].(map[string]any)
	if ref(redrive["deadLetterTargetArn"]) != dlqID {
		t.Errorf("redrive target %v, want the DLQ %s", redrive["deadLetterTargetArn"], dlqID)
	}
	if got := num(t, redrive["maxReceiveCount"], "maxReceiveCount"); got != float64(st.MaxReceiveCount) {
		t.Errorf("maxReceiveCount %v, settings say %d", got, st.MaxReceiveCount)
	}
	// enforceSSL: each queue's policy denies every request without TLS.
	must(t, "queues deny plain HTTP", func() {
		s.tmpl.ResourcePropertiesCountIs(jsii.String("AWS::SQS::QueuePolicy"), map[string]any{
			"PolicyDocument": map[string]any{"Statement": assertions.Match_ArrayWith(&[]any{map[string]any{
				"Effect": "Deny", "Action": "sqs:*", "Principal": map[string]any{"AWS": "*"},
				"Condition": map[string]any{"Bool": map[string]any{"aws:SecureTransport": "false"}},
				"Resource":  assertions.Match_AnyValue(),
			}})},
		}, jsii.Number(2))
	})
}

// The timing rules of docs/architecture.md ("Timing rules and why"), read back
// from the template: what AWS will enforce is the template, not the settings it
// came from.
func TestTimingRulesHoldInTemplate(t *testing.T) {
	for name, overrides := range map[string]map[string]any{
		"defaults": nil,
		"overridden": {"AIJOBS_WORKER_TIMEOUT": "300s", "AIJOBS_VISIBILITY_TIMEOUT": "1820s",
			"AIJOBS_BATCH_WINDOW": "20s", "AIJOBS_MAX_RECEIVE_COUNT": "30", "AIJOBS_MAX_CONCURRENCY": "20"},
		"reservation given": {"workerReservedConcurrency": "15"},
	} {
		t.Run(name, func(t *testing.T) {
			s := defaults(t)
			if overrides != nil {
				s = build(t, overrides, false)
			}
			st := s.cfg.Settings
			_, jobs := s.one(t, "AWS::SQS::Queue", named("QueueName", st.QueueName()))
			_, dlq := s.one(t, "AWS::SQS::Queue", named("QueueName", st.DLQName()))
			_, worker := s.one(t, "AWS::Lambda::Function", named("FunctionName", st.Prefix+"-worker"))
			_, esm := s.one(t, "AWS::Lambda::EventSourceMapping", nil)

			visibility := num(t, jobs["VisibilityTimeout"], "VisibilityTimeout")
			timeout := num(t, worker["Timeout"], "worker Timeout")
			window := num(t, esm["MaximumBatchingWindowInSeconds"], "MaximumBatchingWindowInSeconds")
			if visibility < timeout+window {
				t.Errorf("visibility %v < worker timeout %v + batching window %v", visibility, timeout, window)
			}
			// Throttling alone never costs a receive: Lambda retries a
			// throttled batch while its messages stay hidden, which AWS
			// sizes at six function timeouts (Lambda developer guide,
			// services-sqs-configure.html), and the worker's reserved
			// concurrency covers what the mapping may run at once
			// (services-sqs-scaling.html: reserved concurrency below the
			// maximum concurrency can throttle the mapping).
			if visibility < 6*timeout+window {
				t.Errorf("visibility %v < 6 x worker timeout %v + batching window %v", visibility, timeout, window)
			}
			maxConcurrency := num(t, esm["ScalingConfig"].(map[string]any)["MaximumConcurrency"], "MaximumConcurrency")
			if reserved, ok := worker["ReservedConcurrentExecutions"].(float64); !ok || reserved < maxConcurrency {
				t.Errorf("worker reserved concurrency %v, want at least the mapping's maximum concurrency %v", worker["ReservedConcurrentExecutions"], maxConcurrency)
			}
			if got := worker["ReservedConcurrentExecutions"]; got != float64(st.ReservedConcurrency()) || maxConcurrency != float64(st.MaxConcurrency) {
				t.Errorf("reserved %v / maximum %v, settings say %d / %d", got, maxConcurrency, st.ReservedConcurrency(), st.MaxConcurrency)
			}
			if timeout != st.WorkerTimeout.Seconds() || window != st.BatchWindow.Seconds() {
				t.Errorf("worker timeout %v / window %v, settings say %v / %v", timeout, window, st.WorkerTimeout, st.BatchWindow)
			}
			receives := num(t, jobs["RedrivePolicy"].(map[string]any)["maxReceiveCount"], "maxReceiveCount")
			if receives <= float64(st.Limits.MaxMaxAttempts) {
				t.Errorf("maxReceiveCount %v <= max attempts %d", receives, st.Limits.MaxMaxAttempts)
			}
			if receives <= float64(2*st.Limits.MaxMaxAttempts) {
				t.Errorf("maxReceiveCount %v leaves no room for lease-held redeliveries (max attempts %d)", receives, st.Limits.MaxMaxAttempts)
			}
			if d, q := num(t, dlq["MessageRetentionPeriod"], "DLQ retention"), num(t, jobs["MessageRetentionPeriod"], "queue retention"); d <= q {
				t.Errorf("DLQ retention %v <= queue retention %v", d, q)
			}
		})
	}
}
