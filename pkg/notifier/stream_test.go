package notifier_test

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/aijobs/aijobs/pkg/job"
	"github.com/aijobs/aijobs/pkg/notifier"
)

// change is one stream record's before and after, as the store reads them.
type change struct {
	old, cur       job.Job
	hadOld, hasNew bool
	unreadable     bool
}

func changes(byID map[string]change) notifier.Changes {
	return func(r events.DynamoDBEventRecord) (job.Job, job.Job, bool, bool, error) {
		c := byID[r.EventID]
		if c.unreadable {
			return job.Job{}, job.Job{}, false, false, errors.New("decode job item: attribute version: not a number")
		}
		return c.old, c.cur, c.hadOld, c.hasNew, nil
	}
}

func TestTheStreamSendsOneNoticePerWantedStateChange(t *testing.T) {
	cb := job.Callback{URL: "https://hooks.example.com/x"}
	withRunning := job.Callback{URL: cb.URL, Events: []job.State{job.Running, job.Succeeded}}
	mk := func(state job.State, version int64, c job.Callback) job.Job {
		return job.Job{ID: "job_" + string(state), State: state, Version: version, Callback: c}
	}
	recs := map[string]change{
		"insert":          {cur: mk(job.Queued, 1, cb), hasNew: true},
		"claim, unwanted": {old: mk(job.Queued, 1, cb), cur: mk(job.Running, 2, cb), hadOld: true, hasNew: true},
		"claim, wanted":   {old: mk(job.Queued, 1, withRunning), cur: mk(job.Running, 2, withRunning), hadOld: true, hasNew: true},
		"heartbeat":       {old: mk(job.Running, 2, withRunning), cur: mk(job.Running, 3, withRunning), hadOld: true, hasNew: true},
		"succeed":         {old: mk(job.Running, 3, cb), cur: mk(job.Succeeded, 4, cb), hadOld: true, hasNew: true},
		"delivery record": {old: mk(job.Succeeded, 4, cb), cur: mk(job.Succeeded, 5, cb), hadOld: true, hasNew: true},
		"no callback":     {old: mk(job.Running, 3, job.Callback{}), cur: mk(job.Failed, 4, job.Callback{}), hadOld: true, hasNew: true},
		"unreadable":      {unreadable: true},
		"ttl expiry":      {old: mk(job.Succeeded, 5, cb), hadOld: true},
		"ended":           {old: mk(job.Running, 3, cb), cur: mk(job.Abandoned, 4, cb), hadOld: true, hasNew: true},
	}
	order := []string{"insert", "claim, unwanted", "claim, wanted", "heartbeat", "succeed", "delivery record", "no callback", "unreadable", "ttl expiry", "ended"}
	f := newFixture(t, func(c *notifier.Config) { c.Changes = changes(recs) })
	var ev events.DynamoDBEvent
	for i, id := range order {
		ev.Records = append(ev.Records, events.DynamoDBEventRecord{EventID: id, Change: events.DynamoDBStreamRecord{SequenceNumber: string(rune('a' + i))}})
	}
	resp, err := f.n.Stream(t.Context(), ev)
	if err != nil || len(resp.BatchItemFailures) != 0 {
		t.Fatalf("Stream: %v %v", resp, err)
	}
	var got []notifier.Notice
	for _, b := range f.queue.sent {
		var n notifier.Notice
		if err := json.Unmarshal([]byte(b), &n); err != nil {
			t.Fatal(err)
		}
		got = append(got, n)
	}
	want := []notifier.Notice{{JobID: "job_running", Version: 2, State: "running"}, {JobID: "job_succeeded", Version: 4, State: "succeeded"},
		{JobID: "job_abandoned", Version: 4, State: "abandoned"}}
	if len(got) != len(want) {
		t.Fatalf("notices %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("notice %d = %+v, want %+v", i, got[i], want[i])
		}
	}
}

// A notice that cannot be sent fails its record: Lambda then retries the
// shard from that sequence number, so the notice and everything after it
// come again, in order ("Configuring partial batch response with DynamoDB
// and Lambda", AWS Lambda Developer Guide).
func TestANoticeThatCannotBeSentHoldsTheShardAtItsRecord(t *testing.T) {
	cb := job.Callback{URL: "https://hooks.example.com/x"}
	recs := map[string]change{
		"a": {old: job.Job{ID: "a", State: job.Running, Callback: cb}, cur: job.Job{ID: "a", State: job.Failed, Version: 3, Callback: cb}, hadOld: true, hasNew: true},
		"b": {old: job.Job{ID: "b", State: job.Running, Callback: cb}, cur: job.Job{ID: "b", State: job.Succeeded, Version: 3, Callback: cb}, hadOld: true, hasNew: true},
	}
	f := newFixture(t, func(c *notifier.Config) { c.Changes = changes(recs) })
	f.queue.failAll = true
	resp, err := f.n.Stream(t.Context(), events.DynamoDBEvent{Records: []events.DynamoDBEventRecord{
		{EventID: "a", Change: events.DynamoDBStreamRecord{SequenceNumber: "100"}},
		{EventID: "b", Change: events.DynamoDBStreamRecord{SequenceNumber: "200"}},
	}})
	if err != nil || len(resp.BatchItemFailures) != 1 || resp.BatchItemFailures[0].ItemIdentifier != "100" {
		t.Fatalf("Stream: %+v %v, want the first record's sequence number", resp, err)
	}
}
