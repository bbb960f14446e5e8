package bench

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/aijobs/aijobs/pkg/devserver"
)

// A million jobs of the happy path, priced by hand at the list prices.
func TestCostPerMillionPricesEachCallOnce(t *testing.T) {
	r := Result{Jobs: 1000, Polls: 1000, Calls: map[string]int{
		"DynamoDB.PutItem": 1000, "DynamoDB.UpdateItem": 2000, "DynamoDB.GetItem": 1000,
		"SQS.SendMessage": 1000, "SQS.ReceiveMessage": 100, "SQS.DeleteMessageBatch": 100, "SQS.ChangeMessageVisibility": 1000},
		Worker: devserver.Usage{Invocations: 100, GBSeconds: 25}, API: devserver.Usage{Invocations: 2000, GBSeconds: 5}}
	c := CostPerMillion(r)
	want := map[string][2]float64{
		// (3 writes + 5 index writes) x 0.625 + 1 read x 0.125, per job, x 1e6 / 1e6
		"DynamoDB":   {c.DynamoDB, 8*0.625 + 0.125},
		"SQS":        {c.SQS, 2.2 * 0.40},
		"requests":   {c.LambdaRequests, 2.1 * 0.20},
		"GB-s":       {c.LambdaCompute, 0.03 * 1e6 * 0.0000133334},
		"APIGateway": {c.APIGateway, 2 * 1.00},
		"logs":       {c.PlatformLogs, 2.1 * 350 / 1e9 * 1e6 * 0.50},
	}
	for name, w := range want {
		if math.Abs(w[0]-w[1]) > 1e-9 {
			t.Errorf("%s: $%.6f per million jobs, want $%.6f", name, w[0], w[1])
		}
	}
}

// An eventually consistent GetItem of up to 4 KB takes half a read unit, a
// strongly consistent one (and a Query, here) a whole one (AWS DynamoDB
// Developer Guide, "DynamoDB read and write operations"). A Result
// without the split is priced as before: every GetItem consistent.
func TestCostPerMillionPricesEventualReadsAtHalfAUnit(t *testing.T) {
	for _, c := range []struct {
		name  string
		split GetItemSplit
		units float64 // read units per job
	}{
		{"no split recorded", GetItemSplit{}, 3 + 1},
		{"all consistent", GetItemSplit{Consistent: 3000}, 3 + 1},
		{"two of three eventual", GetItemSplit{Consistent: 1000, Eventual: 2000}, 1 + 2*0.5 + 1},
		{"all eventual", GetItemSplit{Eventual: 3000}, 3*0.5 + 1},
	} {
		r := Result{Jobs: 1000, Calls: map[string]int{"DynamoDB.GetItem": 3000, "DynamoDB.Query": 1000}, GetItems: c.split}
		// No writes but the index writes every job is priced at.
		want := 5*0.625 + c.units*0.125
		if got := CostPerMillion(r).DynamoDB; math.Abs(got-want) > 1e-9 {
			t.Errorf("%s: DynamoDB $%.6f per million jobs, want $%.6f", c.name, got, want)
		}
	}
}

// The notifier's invocations and GB-s are Lambda's like the others', and
// what the functions wrote to their log streams is priced per GB at
// CloudWatch Logs' ingestion price, apart from Lambda's own lines.
func TestCostPerMillionPricesTheNotifierAndTheFunctionsLines(t *testing.T) {
	r := Result{Jobs: 1000,
		Worker: devserver.Usage{Invocations: 100, GBSeconds: 2}, API: devserver.Usage{Invocations: 1000, GBSeconds: 1},
		NotifierStream: devserver.Usage{Invocations: 50, GBSeconds: 1}, NotifierDeliver: devserver.Usage{Invocations: 850, GBSeconds: 4},
		Written: map[string]Written{"api": {Stderr: 300_000}, "worker": {Stderr: 700_000, Stdout: 500_000}, "notifier": {Stdout: 500_000}}}
	c := CostPerMillion(r)
	for name, w := range map[string][2]float64{
		// 2 invocations per job
		"requests": {c.LambdaRequests, 2 * 0.20},
		// 8 GB-s per 1000 jobs
		"GB-s": {c.LambdaCompute, 0.008 * 1e6 * 0.0000133334},
		// 2 invocations x 350 B per job
		"Lambda's lines": {c.PlatformLogs, 2 * 350 / 1e9 * 1e6 * 0.50},
		// 2,000 B per job: 2 GB per million
		"functions' lines": {c.FunctionLogs, 2 * 0.50},
	} {
		if math.Abs(w[0]-w[1]) > 1e-9 {
			t.Errorf("%s: $%.6f per million jobs, want $%.6f", name, w[0], w[1])
		}
	}
	if got, want := c.Total(), c.LambdaRequests+c.LambdaCompute+c.PlatformLogs+c.FunctionLogs+c.DynamoDB+c.SQS+c.APIGateway; math.Abs(got-want) > 1e-9 {
		t.Errorf("total $%.6f, want the lines' sum $%.6f", got, want)
	}
}

// The $ table has a row per lane: the example route's model spend at the
// lane's multiple of the standard price, and the plumbing's share of
// each run's total in that lane.
func TestCostReportHasALaneColumn(t *testing.T) {
	run := Result{Jobs: 1000}
	got := CostReport([]string{"default"}, []Result{run})
	model := ModelPerMillion()
	for _, want := range []string{
		"| lane | model $ per million jobs | plumbing share, default |",
		fmt.Sprintf("| batch (0.5x) | %.2f |", model/2),
		fmt.Sprintf("| flex (0.5x) | %.2f |", model/2),
		fmt.Sprintf("| standard (1x) | %.2f |", model),
		fmt.Sprintf("| priority (1.75x) | %.2f |", model*1.75),
	} {
		if !strings.Contains(got, want) {
			t.Errorf("$ table lacks %q:\n%s", want, got)
		}
	}
}

// A batch job waits on no model call: its plumbing share is the cheapest
// run's total plus the batch lane's own, in every column; the other
// lanes take each run's.
func TestTheBatchLanesPlumbingIsTheCheapestRunsPlusItsOwn(t *testing.T) {
	cheap := Result{Jobs: 1000, Calls: map[string]int{"DynamoDB.UpdateItem": 3000}}
	dear := Result{Jobs: 1000, Calls: map[string]int{"DynamoDB.UpdateItem": 30000}}
	got := CostReport([]string{"cheap", "dear"}, []Result{cheap, dear})
	if extra := BatchLaneExtra(); math.Abs(extra-(4.2*0.625+3.6*0.125)) > 1e-9 {
		t.Errorf("the batch lane's own plumbing is $%.4f per million jobs, want $3.075", extra)
	}
	model := ModelPerMillion()
	share := func(plumbing, model float64) string { return fmt.Sprintf("%.1f%%", 100*plumbing/(plumbing+model)) }
	c, d := CostPerMillion(cheap).Total(), CostPerMillion(dear).Total()
	batch := share(c+BatchLaneExtra(), model/2)
	for _, want := range []string{
		fmt.Sprintf("| batch (0.5x) | %.2f | %s | %s |", model/2, batch, batch),
		fmt.Sprintf("| standard (1x) | %.2f | %s | %s |", model, share(c, model), share(d, model)),
	} {
		if !strings.Contains(got, want) {
			t.Errorf("$ table lacks %q:\n%s", want, got)
		}
	}
}
