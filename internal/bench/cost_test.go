package bench

import (
	"math"
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
