package main

import (
	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	"github.com/aws/jsii-runtime-go"
)

// Queues are the job queue and its dead letter queue.
type Queues struct {
	Jobs awssqs.Queue
	DLQ  awssqs.Queue
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
func newQueues(stack awscdk.Stack, cfg Config) Queues {
	s := cfg.Settings
	dlq := awssqs.NewQueue(stack, jsii.String("DeadLetters"), &awssqs.QueueProps{
		QueueName:       jsii.String(s.DLQName()),
		RetentionPeriod: seconds(s.DLQRetention),
		Encryption:      awssqs.QueueEncryption_SQS_MANAGED,
		EnforceSSL:      jsii.Bool(true),
	})
	jobs := awssqs.NewQueue(stack, jsii.String("JobQueue"), &awssqs.QueueProps{
		QueueName:         jsii.String(s.QueueName()),
		VisibilityTimeout: seconds(s.VisibilityTimeout),
		RetentionPeriod:   seconds(s.QueueRetention),
		Encryption:        awssqs.QueueEncryption_SQS_MANAGED,
		EnforceSSL:        jsii.Bool(true),
		DeadLetterQueue:   &awssqs.DeadLetterQueue{Queue: dlq, MaxReceiveCount: jsii.Number(float64(s.MaxReceiveCount))},
	})
	return Queues{Jobs: jobs, DLQ: dlq}
}
