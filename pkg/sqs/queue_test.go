package sqs_test

import (
	"context"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	awssqs "github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/aijobs/aijobs/internal/awstest"
	"github.com/aijobs/aijobs/pkg/awsclient"
	"github.com/aijobs/aijobs/pkg/settings"
	"github.com/aijobs/aijobs/pkg/sqs"
)

func TestMain(m *testing.M) { os.Exit(awstest.Main(m)) }

func newQueue(t *testing.T) (*sqs.Queue, *awssqs.Client, string, string) {
	t.Helper()
	c := awsclient.SQS(awstest.Config(t, nil))
	s := settings.Defaults()
	s.Prefix = awstest.Prefix(t)
	url, dlq, err := sqs.CreateQueues(context.Background(), c, s)
	if err != nil {
		t.Fatal(err)
	}
	again, dlqAgain, err := sqs.CreateQueues(context.Background(), c, s)
	if err != nil || again != url || dlqAgain != dlq {
		t.Fatalf("second create: %s %s %v", again, dlqAgain, err)
	}
	return sqs.New(c, url, dlq), c, url, dlq
}

func TestQueuesCarrySettings(t *testing.T) {
	_, c, url, _ := newQueue(t)
	out, err := c.GetQueueAttributes(context.Background(), &awssqs.GetQueueAttributesInput{QueueUrl: aws.String(url), AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameAll}})
	if err != nil {
		t.Fatal(err)
	}
	if out.Attributes["VisibilityTimeout"] != strconv.Itoa(int(settings.Defaults().VisibilityTimeout.Seconds())) || out.Attributes["RedrivePolicy"] == "" {
		t.Fatalf("attributes: %v", out.Attributes)
	}
}

func TestSendReceiveHideDelete(t *testing.T) {
	ctx := context.Background()
	q, _, _, _ := newQueue(t)
	if err := q.Send(ctx, "job_aaaaaaaaaaaaaaaaaaaaaaaaaa", "tenant-a"); err != nil {
		t.Fatal(err)
	}
	msgs, err := q.Receive(ctx, 10, time.Second)
	if err != nil || len(msgs) != 1 || msgs[0].Body != `{"job_id":"job_aaaaaaaaaaaaaaaaaaaaaaaaaa"}` || msgs[0].Attributes["ApproximateReceiveCount"] != "1" {
		t.Fatalf("receive: %+v %v", msgs, err)
	}
	// Visible again after a 1 s visibility, as a retry backoff would make it.
	if err := q.ChangeVisibility(ctx, msgs[0].ReceiptHandle, 500*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if again, _ := q.Receive(ctx, 10, 0); len(again) != 0 {
		t.Fatal("a hidden message was delivered")
	}
	time.Sleep(1200 * time.Millisecond)
	again, err := q.Receive(ctx, 10, time.Second)
	if err != nil || len(again) != 1 || again[0].Attributes["ApproximateReceiveCount"] != "2" {
		t.Fatalf("redelivery: %+v %v", again, err)
	}
	if err := q.Delete(ctx, []string{again[0].ReceiptHandle}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(1200 * time.Millisecond)
	if left, _ := q.Receive(ctx, 10, 0); len(left) != 0 {
		t.Fatal("a deleted message came back")
	}
}

func TestDeadLetterCarriesReason(t *testing.T) {
	ctx := context.Background()
	q, c, _, dlq := newQueue(t)
	if err := q.DeadLetter(ctx, "garbage", "unparseable"); err != nil {
		t.Fatal(err)
	}
	out, err := c.ReceiveMessage(ctx, &awssqs.ReceiveMessageInput{QueueUrl: aws.String(dlq), WaitTimeSeconds: 1, MessageAttributeNames: []string{"All"}})
	if err != nil || len(out.Messages) != 1 {
		t.Fatalf("dlq: %+v %v", out, err)
	}
	m := out.Messages[0]
	if aws.ToString(m.Body) != "garbage" || aws.ToString(m.MessageAttributes[sqs.ReasonAttribute].StringValue) != "unparseable" {
		t.Fatalf("dead letter: %s %v", aws.ToString(m.Body), m.MessageAttributes)
	}
}

func TestBacklogCountsVisibleMessages(t *testing.T) {
	ctx := context.Background()
	q, _, _, _ := newQueue(t)
	if n, err := q.Backlog(ctx); err != nil || n != 0 {
		t.Fatalf("empty queue: %d %v", n, err)
	}
	for range 3 {
		if err := q.Send(ctx, "job_aaaaaaaaaaaaaaaaaaaaaaaaaa", "tenant-a"); err != nil {
			t.Fatal(err)
		}
	}
	if n, err := q.Backlog(ctx); err != nil || n != 3 {
		t.Fatalf("three sent: %d %v", n, err)
	}
	if _, err := q.ReceiveHidden(ctx, 1, 0, time.Minute); err != nil {
		t.Fatal(err)
	}
	if n, err := q.Backlog(ctx); err != nil || n != 2 {
		t.Fatalf("one received and hidden: %d %v, want the two still visible", n, err)
	}
}

func TestSendAfterDelaysDelivery(t *testing.T) {
	ctx := context.Background()
	q, _, _, _ := newQueue(t)
	if err := q.SendAfter(ctx, "job_aaaaaaaaaaaaaaaaaaaaaaaaaa", "tenant-a", 2*time.Second); err != nil {
		t.Fatal(err)
	}
	if msgs, err := q.Receive(ctx, 10, 0); err != nil || len(msgs) != 0 {
		t.Fatalf("delivered before its delay: %+v %v", msgs, err)
	}
	// Polled in one-second waits: kumo's long poll does not wake for a
	// delayed message that becomes visible (docs/architecture.md).
	var msgs []events.SQSMessage
	for i := 0; i < 5 && len(msgs) == 0; i++ {
		var err error
		if msgs, err = q.Receive(ctx, 10, time.Second); err != nil {
			t.Fatal(err)
		}
	}
	if len(msgs) != 1 || msgs[0].Attributes["ApproximateReceiveCount"] != "1" {
		t.Fatalf("after the delay: %+v, want one fresh message", msgs)
	}
}

func TestDeadLetterIDsLeaveTheDeadLettersInPlace(t *testing.T) {
	ctx := context.Background()
	q, _, _, _ := newQueue(t)
	ids := []string{"job_aaaaaaaaaaaaaaaaaaaaaaaaaa", "job_bbbbbbbbbbbbbbbbbbbbbbbbbb", "job_cccccccccccccccccccccccccc"}
	for _, id := range ids {
		if err := q.DeadLetter(ctx, `{"job_id":"`+id+`"}`, "receive_limit"); err != nil {
			t.Fatal(err)
		}
	}
	if err := q.DeadLetter(ctx, "not json", "unparseable"); err != nil {
		t.Fatal(err)
	}
	dead, err := q.DeadLetterIDs(ctx, 100, time.Second)
	var got []string
	for _, d := range dead {
		got = append(got, d.JobID)
		if d.SentAt.IsZero() || time.Since(d.SentAt) > time.Minute {
			t.Fatalf("dead letter %+v: want its send time", d)
		}
	}
	slices.Sort(got)
	if err != nil || !slices.Equal(got, ids) {
		t.Fatalf("dead letter ids %v %v, want %v", got, err, ids)
	}
	// Hidden for the sweep, then back: nothing was deleted.
	if again, err := q.DeadLetterIDs(ctx, 100, time.Second); err != nil || len(again) != 0 {
		t.Fatalf("a second sweep within the hide saw %v %v", again, err)
	}
	time.Sleep(1500 * time.Millisecond)
	if again, err := q.DeadLetterIDs(ctx, 2, time.Second); err != nil || len(again) > 2 || len(again) == 0 {
		t.Fatalf("after the hide: %v %v, want the dead letters back, at most 2", again, err)
	}
}

// TestChangeVisibilitiesBatchesAndReportsEachEntry drives the real
// ChangeMessageVisibilityBatch on kumo: eleven messages take two requests
// (SQS takes at most ten entries per request), each message gets its own
// visibility, and an entry SQS refuses fails alone while the request
// answers 200 (API_ChangeMessageVisibilityBatch: "the result of the
// action on each message is reported individually").
func TestChangeVisibilitiesBatchesAndReportsEachEntry(t *testing.T) {
	ctx := context.Background()
	q, _, _, _ := newQueue(t)
	const n = 11
	for i := range n {
		if err := q.Send(ctx, "job_"+strings.Repeat(strconv.Itoa(i%10), 26), "tenant-a"); err != nil {
			t.Fatal(err)
		}
	}
	var handles []string
	for len(handles) < n {
		msgs, err := q.Receive(ctx, 10, time.Second)
		if err != nil || len(msgs) == 0 {
			t.Fatalf("receive: %d of %d, %v", len(handles), n, err)
		}
		for _, m := range msgs {
			handles = append(handles, m.ReceiptHandle)
		}
	}
	changes := map[string]time.Duration{}
	for _, h := range handles {
		changes[h] = time.Minute
	}
	back := handles[4]
	changes[back] = 500 * time.Millisecond
	const bogus = "not-a-receipt-handle"
	changes[bogus] = time.Minute
	failed := q.ChangeVisibilities(ctx, changes)
	if len(failed) != 1 || failed[bogus] == nil {
		t.Fatalf("failed entries = %v, want only the bogus handle", failed)
	}
	time.Sleep(1200 * time.Millisecond)
	again, err := q.Receive(ctx, 10, time.Second)
	if err != nil || len(again) != 1 || again[0].Attributes["ApproximateReceiveCount"] != "2" {
		t.Fatalf("after the batch: %d messages visible (%v), want only the one hidden for 500 ms", len(again), err)
	}
}

// sendRecorder answers every SendMessage and keeps its input; any other
// call would panic (nil embedded client): a send is one request.
type sendRecorder struct {
	sqs.Client
	inputs []*awssqs.SendMessageInput
}

func (r *sendRecorder) SendMessage(_ context.Context, in *awssqs.SendMessageInput, _ ...func(*awssqs.Options)) (*awssqs.SendMessageOutput, error) {
	r.inputs = append(r.inputs, in)
	return &awssqs.SendMessageOutput{}, nil
}

// TestAJobMessageIsGroupedByItsTenant: every job message names its
// tenant as its MessageGroupId, which is what makes the standard queue an
// SQS fair queue (docs/fairness.md, "Tenant fairness"); kumo accepts
// the field and does not echo it, so the request itself is checked. A
// send with no tenant names no group.
func TestAJobMessageIsGroupedByItsTenant(t *testing.T) {
	rec := &sendRecorder{}
	q := sqs.New(rec, "http://q", "http://dlq")
	ctx := context.Background()
	for _, err := range []error{
		q.Send(ctx, "job_aaaaaaaaaaaaaaaaaaaaaaaaaa", "tenant-a"),
		q.SendAfter(ctx, "job_aaaaaaaaaaaaaaaaaaaaaaaaaa", "tenant-b", time.Second),
		q.Send(ctx, "job_aaaaaaaaaaaaaaaaaaaaaaaaaa", ""),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	var got []string
	for _, in := range rec.inputs {
		got = append(got, aws.ToString(in.MessageGroupId))
	}
	if len(got) != 3 || got[0] != "tenant-a" || got[1] != "tenant-b" || rec.inputs[2].MessageGroupId != nil {
		t.Fatalf("groups %q", got)
	}
}
