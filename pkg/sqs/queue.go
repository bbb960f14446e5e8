// Package sqs is the job queue on Amazon SQS. A message carries only a job
// id: the record in the store is the truth, the message is a reminder that a
// job may need work, so duplicates are harmless and losing one is healed by
// a client retry or the reconciler.
package sqs

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	awssqs "github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/aijobs/aijobs/pkg/job"
)

// Client is the part of the SQS API this package calls.
type Client interface {
	SendMessage(context.Context, *awssqs.SendMessageInput, ...func(*awssqs.Options)) (*awssqs.SendMessageOutput, error)
	ChangeMessageVisibility(context.Context, *awssqs.ChangeMessageVisibilityInput, ...func(*awssqs.Options)) (*awssqs.ChangeMessageVisibilityOutput, error)
	ChangeMessageVisibilityBatch(context.Context, *awssqs.ChangeMessageVisibilityBatchInput, ...func(*awssqs.Options)) (*awssqs.ChangeMessageVisibilityBatchOutput, error)
	ReceiveMessage(context.Context, *awssqs.ReceiveMessageInput, ...func(*awssqs.Options)) (*awssqs.ReceiveMessageOutput, error)
	DeleteMessageBatch(context.Context, *awssqs.DeleteMessageBatchInput, ...func(*awssqs.Options)) (*awssqs.DeleteMessageBatchOutput, error)
	GetQueueAttributes(context.Context, *awssqs.GetQueueAttributesInput, ...func(*awssqs.Options)) (*awssqs.GetQueueAttributesOutput, error)
}

// Queue is the job queue and its dead letter queue.
type Queue struct {
	client Client
	url    string
	dlqURL string
}

// New returns the queue at url whose dead letter queue is at dlqURL.
func New(client Client, url, dlqURL string) *Queue {
	return &Queue{client: client, url: url, dlqURL: dlqURL}
}

// MaxVisibility is SQS's upper bound on a message's visibility timeout.
const MaxVisibility = 12 * time.Hour

// ReasonAttribute names the message attribute that says why the worker
// dead-lettered a message itself.
const ReasonAttribute = "aijobs_reason"

// Send enqueues the job id.
func (q *Queue) Send(ctx context.Context, jobID, tenant string) error {
	_, err := q.client.SendMessage(ctx, &awssqs.SendMessageInput{
		QueueUrl:       aws.String(q.url),
		MessageBody:    aws.String(job.QueueMessage{JobID: jobID}.Body()),
		MessageGroupId: group(tenant),
	})
	if err != nil {
		return unavailable("send job message", err)
	}
	return nil
}

// group is a job message's MessageGroupId: its tenant, which makes the
// standard job queue an SQS fair queue (docs/fairness.md, "Tenant
// fairness"): a tenant with a backlog is deprioritised so that the
// others' messages keep their dwell time. None for an unknown tenant.
func group(tenant string) *string {
	if tenant == "" {
		return nil
	}
	return aws.String(tenant)
}

// SendBody enqueues a message whose body its reader declares: the callback
// queue's notices (pkg/notifier).
func (q *Queue) SendBody(ctx context.Context, body string) error {
	_, err := q.client.SendMessage(ctx, &awssqs.SendMessageInput{
		QueueUrl:    aws.String(q.url),
		MessageBody: aws.String(body),
	})
	if err != nil {
		return unavailable("send message", err)
	}
	return nil
}

// MaxDelay is SQS's upper bound on a message's delay.
const MaxDelay = 15 * time.Minute

// SendAfter enqueues the job id to be delivered after delay (rounded up to
// whole seconds, at most MaxDelay): a fresh message that stands in for one
// whose receive count ran out while its job was alive, so a long-held or
// long-backing-off job never reaches the DLQ by redrive.
func (q *Queue) SendAfter(ctx context.Context, jobID, tenant string, delay time.Duration) error {
	if delay > MaxDelay {
		delay = MaxDelay
	}
	_, err := q.client.SendMessage(ctx, &awssqs.SendMessageInput{
		QueueUrl:       aws.String(q.url),
		MessageBody:    aws.String(job.QueueMessage{JobID: jobID}.Body()),
		DelaySeconds:   visibilitySeconds(delay),
		MessageGroupId: group(tenant),
	})
	if err != nil {
		return unavailable("send job message", err)
	}
	return nil
}

// ChangeVisibility hides a received message for d from now (rounded up to
// whole seconds, clamped to SQS's bounds): the heartbeat's lease horizon, or
// a retry's backoff.
func (q *Queue) ChangeVisibility(ctx context.Context, receiptHandle string, d time.Duration) error {
	_, err := q.client.ChangeMessageVisibility(ctx, &awssqs.ChangeMessageVisibilityInput{
		QueueUrl:          aws.String(q.url),
		ReceiptHandle:     aws.String(receiptHandle),
		VisibilityTimeout: visibilitySeconds(d),
	})
	if err != nil {
		return unavailable("change message visibility", err)
	}
	return nil
}

// ChangeVisibilities hides several received messages, each for its own
// duration from now (receipt handle to duration, rounded and clamped as
// ChangeVisibility's), in ChangeMessageVisibilityBatch requests of up to
// ten entries: one invocation's heartbeat renews all its messages in one
// request instead of one each. It returns the error of each change that
// failed, by receipt handle, and nil when none did. SQS reports each
// entry's result apart, with HTTP 200 even when some failed
// (docs.aws.amazon.com/AWSSimpleQueueService/latest/APIReference/API_ChangeMessageVisibilityBatch.html),
// so a failure is per entry; a request that fails as a whole, or an entry
// the answer does not mention, fails each change it carried.
func (q *Queue) ChangeVisibilities(ctx context.Context, changes map[string]time.Duration) map[string]error {
	handles := make([]string, 0, len(changes))
	for h := range changes {
		handles = append(handles, h)
	}
	slices.Sort(handles)
	var failed map[string]error
	fail := func(h string, err error) {
		if failed == nil {
			failed = map[string]error{}
		}
		failed[h] = err
	}
	for start := 0; start < len(handles); start += 10 {
		chunk := handles[start:min(start+10, len(handles))]
		entries := make([]types.ChangeMessageVisibilityBatchRequestEntry, 0, len(chunk))
		for i, h := range chunk {
			entries = append(entries, types.ChangeMessageVisibilityBatchRequestEntry{Id: aws.String(strconv.Itoa(i)),
				ReceiptHandle: aws.String(h), VisibilityTimeout: visibilitySeconds(changes[h])})
		}
		out, err := q.client.ChangeMessageVisibilityBatch(ctx, &awssqs.ChangeMessageVisibilityBatchInput{QueueUrl: aws.String(q.url), Entries: entries})
		if err != nil {
			for _, h := range chunk {
				fail(h, unavailable("change message visibility (batch)", err))
			}
			continue
		}
		done := make([]bool, len(chunk))
		for _, ok := range out.Successful {
			if i, err := strconv.Atoi(aws.ToString(ok.Id)); err == nil && i >= 0 && i < len(chunk) {
				done[i] = true
			}
		}
		for _, f := range out.Failed {
			if i, err := strconv.Atoi(aws.ToString(f.Id)); err == nil && i >= 0 && i < len(chunk) {
				done[i] = false
				fail(chunk[i], unavailable("change message visibility (batch entry)", fmt.Errorf("%s: %s", aws.ToString(f.Code), aws.ToString(f.Message))))
			}
		}
		for i, h := range chunk {
			if _, already := failed[h]; !done[i] && !already {
				fail(h, unavailable("change message visibility (batch entry)", errors.New("no result for the entry")))
			}
		}
	}
	return failed
}

// Backlog is about how many messages wait in the queue, visible (SQS's
// ApproximateNumberOfMessages): the reconciler's sign that queued jobs may
// simply not have been reached yet.
func (q *Queue) Backlog(ctx context.Context) (int, error) {
	out, err := q.client.GetQueueAttributes(ctx, &awssqs.GetQueueAttributesInput{
		QueueUrl:       aws.String(q.url),
		AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameApproximateNumberOfMessages},
	})
	if err != nil {
		return 0, unavailable("read the queue's backlog", err)
	}
	n, err := strconv.Atoi(out.Attributes[string(types.QueueAttributeNameApproximateNumberOfMessages)])
	if err != nil {
		return 0, unavailable("read the queue's backlog", err)
	}
	return n, nil
}

// DeadLetter sends a message the worker cannot use to the dead letter queue
// with the reason as an attribute, so it never loops until maxReceiveCount.
// The caller then lets the original be deleted.
func (q *Queue) DeadLetter(ctx context.Context, body, reason string) error {
	if body == "" {
		body = "(empty)"
	}
	_, err := q.client.SendMessage(ctx, &awssqs.SendMessageInput{
		QueueUrl:    aws.String(q.dlqURL),
		MessageBody: aws.String(body),
		MessageAttributes: map[string]types.MessageAttributeValue{
			ReasonAttribute: {DataType: aws.String("String"), StringValue: aws.String(reason)},
		},
	})
	if err != nil {
		return unavailable("send to dead letter queue", err)
	}
	return nil
}

// DeadLetterIDs receives up to max messages from the dead letter queue,
// hiding each for hide so one sweep sees it once, and returns the jobs
// they name (unparseable ones are skipped: they name no job). Nothing is
// deleted: a dead letter stays for an operator's replay and its alarm.
func (q *Queue) DeadLetterIDs(ctx context.Context, max int, hide time.Duration) ([]job.DeadLetter, error) {
	dlq := q.DeadLetters()
	seen := map[string]bool{}
	var out []job.DeadLetter
	for len(seen) < max {
		msgs, err := dlq.ReceiveHidden(ctx, min(10, max-len(seen)), 0, hide)
		if err != nil {
			return out, err
		}
		fresh := 0
		for _, m := range msgs {
			if seen[m.MessageId] {
				continue
			}
			seen[m.MessageId] = true
			fresh++
			body, ok := job.ParseQueueMessage(m.Body)
			if !ok || !job.ValidID(body.JobID) {
				continue
			}
			d := job.DeadLetter{JobID: body.JobID}
			if ms, err := strconv.ParseInt(m.Attributes["SentTimestamp"], 10, 64); err == nil {
				d.SentAt = time.UnixMilli(ms).UTC()
			}
			out = append(out, d)
		}
		if fresh == 0 {
			return out, nil
		}
	}
	return out, nil
}

// DeadLetters is the dead letter queue as a queue of its own, for the
// operator's replay to receive from and delete in.
func (q *Queue) DeadLetters() *Queue { return &Queue{client: q.client, url: q.dlqURL} }

// Receive long-polls for up to max messages, waiting at most wait, and
// returns them as Lambda's SQS event records (what the event source mapping
// would hand the worker).
func (q *Queue) Receive(ctx context.Context, max int, wait time.Duration) ([]events.SQSMessage, error) {
	return q.ReceiveHidden(ctx, max, wait, 0)
}

// ReceiveHidden is Receive that hides the messages for hide (0: the
// queue's visibility timeout), so a sweep over a queue sees each message
// once.
func (q *Queue) ReceiveHidden(ctx context.Context, max int, wait, hide time.Duration) ([]events.SQSMessage, error) {
	in := &awssqs.ReceiveMessageInput{
		QueueUrl:                    aws.String(q.url),
		MaxNumberOfMessages:         int32(max),
		WaitTimeSeconds:             int32(wait / time.Second),
		MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameAll},
		MessageAttributeNames:       []string{"All"},
	}
	if hide > 0 {
		in.VisibilityTimeout = visibilitySeconds(hide)
	}
	out, err := q.client.ReceiveMessage(ctx, in)
	if err != nil {
		return nil, unavailable("receive messages", err)
	}
	msgs := make([]events.SQSMessage, 0, len(out.Messages))
	for _, m := range out.Messages {
		msgs = append(msgs, toEvent(m))
	}
	return msgs, nil
}

// Delete removes processed messages by receipt handle, in batches of ten.
func (q *Queue) Delete(ctx context.Context, receiptHandles []string) error {
	for start := 0; start < len(receiptHandles); start += 10 {
		end := min(start+10, len(receiptHandles))
		entries := make([]types.DeleteMessageBatchRequestEntry, 0, end-start)
		for i, h := range receiptHandles[start:end] {
			entries = append(entries, types.DeleteMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), ReceiptHandle: aws.String(h)})
		}
		out, err := q.client.DeleteMessageBatch(ctx, &awssqs.DeleteMessageBatchInput{QueueUrl: aws.String(q.url), Entries: entries})
		if err != nil {
			return unavailable("delete messages", err)
		}
		if len(out.Failed) > 0 {
			return &job.Error{Code: job.CodeUnavailable, Message: fmt.Sprintf("%d message deletions failed", len(out.Failed))}
		}
	}
	return nil
}

func toEvent(m types.Message) events.SQSMessage {
	e := events.SQSMessage{
		MessageId:     aws.ToString(m.MessageId),
		ReceiptHandle: aws.ToString(m.ReceiptHandle),
		Body:          aws.ToString(m.Body),
		Md5OfBody:     aws.ToString(m.MD5OfBody),
		Attributes:    m.Attributes,
		EventSource:   "aws:sqs",
	}
	if len(m.MessageAttributes) > 0 {
		e.MessageAttributes = map[string]events.SQSMessageAttribute{}
		for k, v := range m.MessageAttributes {
			e.MessageAttributes[k] = events.SQSMessageAttribute{StringValue: v.StringValue, BinaryValue: v.BinaryValue, DataType: aws.ToString(v.DataType)}
		}
	}
	return e
}

func visibilitySeconds(d time.Duration) int32 {
	if d <= 0 {
		return 0
	}
	if d > MaxVisibility {
		d = MaxVisibility
	}
	return int32((d + time.Second - 1) / time.Second)
}

func unavailable(what string, err error) error {
	return &job.Error{Code: job.CodeUnavailable, Message: "the job queue is unavailable", Err: fmt.Errorf("sqs: %s: %w", what, err)}
}
