package bench

import (
	"strings"
	"testing"

	"github.com/aijobs/aijobs/pkg/devserver"
)

// A callback's added calls leave the stream's reads out (free to a Lambda
// trigger) and report them apart, with the notifier's invocations.
func TestCallbackReportLeavesStreamReadsOutOfTheAddedCalls(t *testing.T) {
	without := Result{Jobs: 100, Calls: map[string]int{"DynamoDB.GetItem": 100, "SQS.SendMessage": 100}}
	with := Result{Jobs: 100, Delivered: 100, Calls: map[string]int{"DynamoDB.GetItem": 200, "SQS.SendMessage": 200,
		"DynamoDB Streams.GetRecords": 30, "DynamoDB Streams.GetShardIterator": 2},
		NotifierStream: devserver.Usage{Invocations: 6, GBSeconds: 0.1}, NotifierDeliver: devserver.Usage{Invocations: 93, GBSeconds: 0.3}}
	got := CallbackReport(without, with)
	for _, want := range []string{
		"100 jobs with a callback, 100 delivered",
		"2.00 without a callback, 4.00 with one (+2.00)",
		"stream reads (free to a Lambda trigger, not priced): 0.32 per job",
		"| SQS.SendMessage | 1.00 | 2.00 | +1.00 |",
		"| DynamoDB Streams.GetRecords | 0.00 | 0.30 | +0.30 |",
		"0.06 from the stream (0.00100 GB-s), 0.93 from the callback queue (0.00300 GB-s)",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("callback report lacks %q:\n%s", want, got)
		}
	}
}
