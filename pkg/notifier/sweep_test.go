package notifier_test

import (
	"context"
	"encoding/json"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/aijobs/aijobs/pkg/notifier"
)

// deadLetters is a callback DLQ: ReceiveHidden returns each message once
// (hidden for the rest of the sweep, as its visibility timeout would),
// Delete removes it.
type deadLetters struct {
	mu       sync.Mutex
	msgs     []events.SQSMessage
	received map[string]bool
	deleted  []string
	hides    []time.Duration
}

func (d *deadLetters) ReceiveHidden(_ context.Context, max int, _, hide time.Duration) ([]events.SQSMessage, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.hides = append(d.hides, hide)
	var out []events.SQSMessage
	for _, m := range d.msgs {
		if len(out) < max && !d.received[m.MessageId] {
			d.received[m.MessageId] = true
			out = append(out, m)
		}
	}
	return out, nil
}

func (d *deadLetters) Delete(_ context.Context, handles []string) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.deleted = append(d.deleted, handles...)
	d.msgs = slices.DeleteFunc(d.msgs, func(m events.SQSMessage) bool { return slices.Contains(handles, m.ReceiptHandle) })
	return nil
}

type metrics struct {
	mu  sync.Mutex
	got map[string]float64
}

func (m *metrics) Emit(name string, v float64, _ string, _ map[string]string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.got == nil {
		m.got = map[string]float64{}
	}
	m.got[name] += v
}

func dlqMessage(id, body, reason string) events.SQSMessage {
	m := events.SQSMessage{MessageId: id, ReceiptHandle: "rh-" + id, Body: body}
	if reason != "" {
		m.MessageAttributes = map[string]events.SQSMessageAttribute{"aijobs_reason": {DataType: "String", StringValue: &reason}}
	}
	return m
}

// The callback DLQ's arrival alarm reads NumberOfMessagesSent, which SQS's
// redrive does not move (SQS developer guide, sqs-dead-letter-queues.html):
// the sweep sends each redriven notice again with a reason, deletes the
// original and counts it, and leaves what the notifier gave up (reason
// set) and the stream mapping's records of discarded batches (counted when
// Lambda sent them) alone. Run through Handle with a scheduled event, as
// the stack's schedule invokes it.
func TestSweepMarksRedrivenNotices(t *testing.T) {
	f := newFixture(t)
	notice := `{"job_id":"j1","version":3,"state":"succeeded"}`
	discarded := `{"requestContext":{"condition":"RecordAgeExceeded"},"version":"1.0","DDBStreamBatchInfo":{"shardId":"s","batchSize":1}}`
	dlq := &deadLetters{received: map[string]bool{}, msgs: []events.SQSMessage{
		dlqMessage("redriven", notice, ""),
		dlqMessage("gaveup", `{"job_id":"j2","version":4,"state":"failed"}`, "callback_gave_up"),
		dlqMessage("discarded", discarded, ""),
		dlqMessage("stray", "not a notice", ""),
	}}
	m := &metrics{}
	f = newFixtureWith(t, f, func(c *notifier.Config) { c.DeadLetters, c.Metrics = dlq, m })
	out, err := f.n.Handle(t.Context(), json.RawMessage(`{"version":"0","detail-type":"Scheduled Event","source":"aws.events","detail":{}}`))
	if err != nil {
		t.Fatal(err)
	}
	if rep, ok := out.(notifier.SweepReport); !ok || rep.Redriven != 2 || rep.Errors != 0 {
		t.Errorf("Handle(schedule) = %#v, want a sweep that marked 2", out)
	}
	if want := map[string]string{notice: "callback_redriven", "not a notice": "callback_redriven"}; len(f.queue.dead) != 2 ||
		f.queue.dead[notice] != want[notice] || f.queue.dead["not a notice"] != want["not a notice"] {
		t.Errorf("sent to the DLQ %v, want %v", f.queue.dead, want)
	}
	if slices.Sort(dlq.deleted); !slices.Equal(dlq.deleted, []string{"rh-redriven", "rh-stray"}) {
		t.Errorf("deleted %v, want the two originals", dlq.deleted)
	}
	if m.got["CallbackNoticesRedriven"] != 2 {
		t.Errorf("CallbackNoticesRedriven = %v, want 2", m.got["CallbackNoticesRedriven"])
	}
	for _, h := range dlq.hides {
		if h <= 0 {
			t.Errorf("a receive did not hide what it read (%s): a sweep could read a message twice", h)
		}
	}
}

// A mark that cannot be sent keeps the original (and is an error): the
// next sweep tries again, so an arrival is never lost for the alarm.
func TestSweepKeepsWhatItCouldNotMark(t *testing.T) {
	f := newFixture(t)
	f.queue.failAll = true
	dlq := &deadLetters{received: map[string]bool{}, msgs: []events.SQSMessage{dlqMessage("a", `{"job_id":"j1","version":3,"state":"succeeded"}`, "")}}
	f = newFixtureWith(t, f, func(c *notifier.Config) { c.DeadLetters = dlq })
	rep, err := f.n.Sweep(t.Context())
	if err != nil || rep.Redriven != 0 || rep.Errors != 1 || len(dlq.deleted) != 0 {
		t.Errorf("Sweep = %+v, %v, deleted %v; want one error and the original kept", rep, err, dlq.deleted)
	}
	if rep, err := newFixture(t).n.Sweep(t.Context()); err != nil || rep != (notifier.SweepReport{}) {
		t.Errorf("Sweep without a DLQ = %+v, %v; want nothing done", rep, err)
	}
}
