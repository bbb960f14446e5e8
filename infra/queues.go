package main

import (
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	"github.com/aws/jsii-runtime-go"
)

// Queues are the job queue and its dead letter queue, and the callback
// queue of the notifier's notices and its dead letter queue.
type Queues struct {
	Jobs        awssqs.Queue
	DLQ         awssqs.Queue
	Callbacks   awssqs.Queue
	CallbackDLQ awssqs.Queue
}

// newQueues builds the queues with the timing rules of docs/architecture.md
// ("Timing rules and why"), all from
// settings (Validate has already checked them):
//   - visibility >= worker timeout + batching window, or AWS refuses the
//     event source mapping and a slow batch would be delivered twice;
//   - maxReceiveCount > max attempts (with room for lease-held
//     redeliveries), so the worker's own accounting stops a job first and
//     redrive only catches workers that crash without recording anything;
//   - DLQ retention > queue retention, because a dead-lettered message keeps
//     its original enqueue time and would otherwise expire on arrival.
//
// The queues keep CDK's default removal policy (delete with the stack):
// they hold only job ids, and the job records are the source of truth.
//
// The callback queue pair follows the same rules with the notifier's
// numbers (pkg/sqs.CreateCallbackQueues makes the same pair locally): six
// notifier timeouts of visibility, so Lambda can retry a throttled batch
// before its messages return; the notifier gives a notice up itself after
// its last attempt, and redrive (CallbackMaxReceives, ten receives more)
// only catches notices no notifier ever handled; the job queue's retention,
// which ValidateDeployment checks is longer than the retry schedule.
func newQueues(stack awscdk.Stack, cfg Config) Queues {
	s := cfg.Settings
	jobs, dlq := newQueuePair(stack, queuePairSpec{
		ID: "JobQueue", DLQID: "DeadLetters", Name: s.QueueName(), DLQName: s.DLQName(),
		Visibility: s.VisibilityTimeout, Retention: s.QueueRetention, DLQRetention: s.DLQRetention, MaxReceives: s.MaxReceiveCount,
	})
	callbacks, callbackDLQ := newQueuePair(stack, queuePairSpec{
		ID: "CallbackQueue", DLQID: "CallbackDeadLetters", Name: s.CallbackQueueName(), DLQName: s.CallbackDLQName(),
		Visibility: s.CallbackVisibility(), Retention: s.QueueRetention, DLQRetention: s.DLQRetention, MaxReceives: s.CallbackMaxReceives(),
	})
	return Queues{Jobs: jobs, DLQ: dlq, Callbacks: callbacks, CallbackDLQ: callbackDLQ}
}

// queuePairSpec is what tells the job queue pair from the callback pair:
// their construct ids, names and timing numbers. Everything else about a
// pair is the same for both, so it lives once, in newQueuePair.
type queuePairSpec struct {
	ID, DLQID     string
	Name, DLQName string
	Visibility    time.Duration
	Retention     time.Duration
	DLQRetention  time.Duration
	// MaxReceives is the redrive's maxReceiveCount: the receives after
	// which SQS moves a message to the DLQ.
	MaxReceives int
}

// newQueuePair is a queue and its dead letter queue, both encrypted
// (SSE-SQS) and TLS only.
func newQueuePair(stack awscdk.Stack, spec queuePairSpec) (queue, dlq awssqs.Queue) {
	dlq = awssqs.NewQueue(stack, jsii.String(spec.DLQID), &awssqs.QueueProps{
		QueueName:       jsii.String(spec.DLQName),
		RetentionPeriod: seconds(spec.DLQRetention),
		Encryption:      awssqs.QueueEncryption_SQS_MANAGED,
		EnforceSSL:      jsii.Bool(true),
	})
	queue = awssqs.NewQueue(stack, jsii.String(spec.ID), &awssqs.QueueProps{
		QueueName:         jsii.String(spec.Name),
		VisibilityTimeout: seconds(spec.Visibility),
		RetentionPeriod:   seconds(spec.Retention),
		Encryption:        awssqs.QueueEncryption_SQS_MANAGED,
		EnforceSSL:        jsii.Bool(true),
		DeadLetterQueue:   &awssqs.DeadLetterQueue{Queue: dlq, MaxReceiveCount: jsii.Number(float64(spec.MaxReceives))},
	})
	return queue, dlq
}
