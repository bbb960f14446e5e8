package main

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	awssqs "github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/jsii-runtime-go"

	"github.com/aijobs/aijobs/pkg/settings"
	"github.com/aijobs/aijobs/pkg/sqs"
)

func TestQueues(t *testing.T) {
	s := defaults(t)
	st := settings.Defaults()
	_, jobs := s.one(t, "AWS::SQS::Queue", named("QueueName", st.QueueName()))
	dlqID, dlq := s.one(t, "AWS::SQS::Queue", named("QueueName", st.DLQName()))
	_, callbacks := s.one(t, "AWS::SQS::Queue", named("QueueName", st.CallbackQueueName()))
	_, callbackDLQ := s.one(t, "AWS::SQS::Queue", named("QueueName", st.CallbackDLQName()))
	if n := len(s.resources("AWS::SQS::Queue")); n != 4 {
		t.Errorf("%d queues, want the job queue, the callback queue and their DLQs", n)
	}
	for name, q := range map[string]map[string]any{"job queue": jobs, "DLQ": dlq, "callback queue": callbacks, "callback DLQ": callbackDLQ} {
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
		}, jsii.Number(4))
	})
}

// queueRecorder is an SQS that records the queues pkg/sqs creates.
type queueRecorder struct{ attrs map[string]map[string]string }

func (r *queueRecorder) CreateQueue(_ context.Context, in *awssqs.CreateQueueInput, _ ...func(*awssqs.Options)) (*awssqs.CreateQueueOutput, error) {
	if r.attrs == nil {
		r.attrs = map[string]map[string]string{}
	}
	r.attrs[*in.QueueName] = in.Attributes
	return &awssqs.CreateQueueOutput{QueueUrl: jsii.String("https://sqs.us-east-1.amazonaws.com/111122223333/" + *in.QueueName)}, nil
}

func (r *queueRecorder) GetQueueAttributes(_ context.Context, in *awssqs.GetQueueAttributesInput, _ ...func(*awssqs.Options)) (*awssqs.GetQueueAttributesOutput, error) {
	name := (*in.QueueUrl)[strings.LastIndex(*in.QueueUrl, "/")+1:]
	return &awssqs.GetQueueAttributesOutput{Attributes: map[string]string{"QueueArn": "arn:aws:sqs:us-east-1:111122223333:" + name}}, nil
}

func (r *queueRecorder) SetQueueAttributes(context.Context, *awssqs.SetQueueAttributesInput, ...func(*awssqs.Options)) (*awssqs.SetQueueAttributesOutput, error) {
	return &awssqs.SetQueueAttributesOutput{}, nil
}

// Both queue pairs of the stack are the pairs pkg/sqs creates for the
// local stacks (CreateQueues, CreateCallbackQueues), compared with what
// they actually send: visibility, retention, redrive target and
// maxReceiveCount, and the DLQs' retention. The dev server's notifier and
// worker run on the same queues as the deployed ones.
func TestQueuesMatchLocal(t *testing.T) {
	s := defaults(t)
	rec := &queueRecorder{}
	if _, _, err := sqs.CreateQueues(t.Context(), rec, s.cfg.Settings); err != nil {
		t.Fatal(err)
	}
	if _, _, err := sqs.CreateCallbackQueues(t.Context(), rec, s.cfg.Settings); err != nil {
		t.Fatal(err)
	}
	names := map[string]string{} // logical id -> queue name
	for id, r := range s.resources("AWS::SQS::Queue") {
		names[id] = r["Properties"].(map[string]any)["QueueName"].(string)
	}
	if len(rec.attrs) != 4 || len(names) != 4 {
		t.Fatalf("pkg/sqs creates %v, the stack %v: want two pairs each", sortedKeys(rec.attrs), names)
	}
	for id, name := range names {
		want, ok := rec.attrs[name]
		if !ok {
			t.Errorf("the stack's queue %s is not one pkg/sqs creates", name)
			continue
		}
		props := s.resources("AWS::SQS::Queue")[id]["Properties"].(map[string]any)
		got := map[string]string{}
		if v, ok := props["MessageRetentionPeriod"]; ok {
			got["MessageRetentionPeriod"] = numText(v)
		}
		if v, ok := props["VisibilityTimeout"]; ok {
			got["VisibilityTimeout"] = numText(v)
		}
		if r, ok := props["RedrivePolicy"].(map[string]any); ok {
			b, _ := json.Marshal(map[string]string{
				"deadLetterTargetArn": "arn:aws:sqs:us-east-1:111122223333:" + names[ref(r["deadLetterTargetArn"])],
				"maxReceiveCount":     numText(r["maxReceiveCount"]),
			})
			got["RedrivePolicy"] = string(b)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("queue %s: the stack sets\n  %v\npkg/sqs creates\n  %v", name, got, want)
		}
	}
	// The callback pair, by name: the notifier's numbers.
	st := s.cfg.Settings
	cb := rec.attrs[st.CallbackQueueName()]
	if cb["VisibilityTimeout"] != fmt.Sprint(int(st.CallbackVisibility().Seconds())) ||
		!strings.Contains(cb["RedrivePolicy"], `"maxReceiveCount":"`+fmt.Sprint(st.CallbackMaxReceives())+`"`) ||
		!strings.Contains(cb["RedrivePolicy"], st.CallbackDLQName()) {
		t.Errorf("callback queue %v, want visibility %s and %d receives into %s", cb, st.CallbackVisibility(), st.CallbackMaxReceives(), st.CallbackDLQName())
	}
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
			queueID, _ := s.one(t, "AWS::SQS::Queue", named("QueueName", st.QueueName()))
			esm := mapping(t, s, "worker", queueID)

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

// numText writes a template number as SQS attributes hold it ("1209600").
func numText(v any) string {
	if f, ok := v.(float64); ok {
		return strconv.FormatFloat(f, 'f', -1, 64)
	}
	return fmt.Sprint(v)
}
