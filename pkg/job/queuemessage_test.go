package job_test

import (
	"testing"

	"github.com/aijobs/aijobs/pkg/job"
)

// The message's wire form is {"job_id":"..."} (docs/architecture.md, "What
// the worker does with a message"): what the worker, replay and the chaos
// harness read is what the queue writes.
func TestQueueMessageBodyAndParse(t *testing.T) {
	if got := (job.QueueMessage{JobID: "job_abc"}).Body(); got != `{"job_id":"job_abc"}` {
		t.Fatalf("Body = %s", got)
	}
	for body, want := range map[string]string{
		`{"job_id":"job_abc"}`:                    "job_abc",
		` {"job_id":"x","other":1} `:              "x", // unknown members are ignored, as before
		(job.QueueMessage{JobID: "job_y"}).Body(): "job_y",
		`not json`:                "",
		`["job_abc"]`:             "",
		`{}`:                      "",
		`{"job_id":""}`:           "",
		`{"job_id":5}`:            "",
		`{"job_id":"a"} trailing`: "",
	} {
		m, ok := job.ParseQueueMessage(body)
		if ok != (want != "") || m.JobID != want {
			t.Errorf("ParseQueueMessage(%q) = %+v, %v; want %q", body, m, ok, want)
		}
	}
}
