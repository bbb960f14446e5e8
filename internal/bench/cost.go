package bench

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
)

// Prices are AWS's us-east-1 list prices in dollars, first tier, without
// free tiers; docs/benchmarks.md gives each one's source and the date it
// was read.
var Prices = struct {
	DynamoDBWriteUnit, DynamoDBReadUnit float64 // on-demand, per request unit
	SQSRequest                          float64 // standard queue, per 64 KB request
	LambdaRequest, LambdaArmGBSecond    float64
	HTTPAPIRequest                      float64 // API Gateway HTTP API
	LogsIngestedGB                      float64 // CloudWatch Logs, standard class
}{
	DynamoDBWriteUnit: 0.625 / 1e6, DynamoDBReadUnit: 0.125 / 1e6,
	SQSRequest:    0.40 / 1e6,
	LambdaRequest: 0.20 / 1e6, LambdaArmGBSecond: 0.0000133334,
	HTTPAPIRequest: 1.00 / 1e6,
	LogsIngestedGB: 0.50,
}

// The cost model's assumptions, not measurements (docs/benchmarks.md):
// items under 1 KB (one write unit per write; one read unit per strongly
// consistent GetItem or Query, half a unit per eventually consistent
// GetItem, as AWS's DynamoDB Developer Guide, "DynamoDB read and write
// operations", prices reads of up to 4 KB); index writes per job from the
// table's design (create: by_tenant and active; claim: by_tenant; finish:
// by_tenant, and active losing the job), heartbeats writing to no index; and log bytes per
// invocation for Lambda's own START/END/REPORT lines. The functions' own
// lines (JSON logs and EMF metrics) are measured: Result.Written.
const (
	indexWritesPerJob       = 5
	platformLogBytesPerCall = 350
)

// Cost is one run's AWS spend per million jobs, by service. CloudWatch
// Logs is two lines: Lambda's own lines (assumed bytes per invocation)
// and what the functions wrote (measured).
type Cost struct {
	DynamoDB, SQS, LambdaRequests, LambdaCompute, APIGateway, PlatformLogs, FunctionLogs float64
}

// Total is every line.
func (c Cost) Total() float64 {
	return c.DynamoDB + c.SQS + c.LambdaRequests + c.LambdaCompute + c.APIGateway + c.PlatformLogs + c.FunctionLogs
}

// CostPerMillion prices r's measured calls, GB-seconds and log bytes at
// Prices: API requests are r's creates and polls (each one API Gateway
// request and one API invocation), the worker's and the notifier's
// invocations are the emulator's. DynamoDB Streams reads are not priced:
// AWS's DynamoDB pricing page ("DynamoDB Streams") does not charge the
// GetRecords a Lambda trigger makes (docs/benchmarks.md reports them
// apart).
func CostPerMillion(r Result) Cost {
	perM := func(n float64) float64 { return n / float64(max(r.Jobs, 1)) * 1e6 }
	writes := r.calls("DynamoDB.PutItem", "DynamoDB.UpdateItem", "DynamoDB.DeleteItem") + indexWritesPerJob*r.Jobs
	reads := r.readUnits()
	sqs := 0
	for op, n := range r.Calls {
		if strings.HasPrefix(op, "SQS.") {
			sqs += n
		}
	}
	apiRequests := r.Jobs + r.Polls
	invocations := r.invocations()
	var written int64
	for _, w := range r.Written {
		written += w.Total()
	}
	return Cost{
		DynamoDB:       perM(float64(writes))*Prices.DynamoDBWriteUnit + perM(reads)*Prices.DynamoDBReadUnit,
		SQS:            perM(float64(sqs)) * Prices.SQSRequest,
		LambdaRequests: perM(float64(invocations)) * Prices.LambdaRequest,
		LambdaCompute: perM(r.Worker.GBSeconds+r.API.GBSeconds+r.NotifierStream.GBSeconds+r.NotifierDeliver.GBSeconds) *
			Prices.LambdaArmGBSecond,
		APIGateway:   perM(float64(apiRequests)) * Prices.HTTPAPIRequest,
		PlatformLogs: perM(float64(invocations*platformLogBytesPerCall)) / 1e9 * Prices.LogsIngestedGB,
		FunctionLogs: perM(float64(written)) / 1e9 * Prices.LogsIngestedGB,
	}
}

// eventualReadUnit is what an eventually consistent read of up to 4 KB
// takes of a read unit (a strongly consistent one takes a whole unit).
const eventualReadUnit = 0.5

// readUnits are r's DynamoDB read units: a whole one per Query and per
// GetItem not known to be eventually consistent (a Result without the
// split is priced as before, all consistent), half a one per eventually
// consistent GetItem.
func (r Result) readUnits() float64 {
	consistent := r.calls("DynamoDB.GetItem", "DynamoDB.Query") - r.GetItems.Eventual
	return float64(consistent) + eventualReadUnit*float64(r.GetItems.Eventual)
}

// ExampleRoute is the model spend a job adds on the shipped default route
// (AIJOBS_PRICE_INPUT/OUTPUT: 15 and 60 cents per million tokens), for a
// job of ExampleInputTokens in and ExampleOutputTokens out.
const (
	ExampleInputTokens  = 1000
	ExampleOutputTokens = 500
	exampleInputPrice   = 0.15 / 1e6
	exampleOutputPrice  = 0.60 / 1e6
)

// ModelPerMillion is the example route's spend per million jobs.
func ModelPerMillion() float64 {
	return 1e6 * (ExampleInputTokens*exampleInputPrice + ExampleOutputTokens*exampleOutputPrice)
}

// CostReport renders runs' costs per million jobs side by side, with the
// example route's model spend and the plumbing's share of the total.
func CostReport(names []string, runs []Result) string {
	var b strings.Builder
	b.WriteString("| $ per million jobs |")
	for _, n := range names {
		b.WriteString(" " + n + " |")
	}
	b.WriteString("\n|---|" + strings.Repeat("---|", len(names)) + "\n")
	costs := make([]Cost, len(runs))
	for i, r := range runs {
		costs[i] = CostPerMillion(r)
	}
	line := func(label string, f func(Cost) float64) {
		b.WriteString("| " + label + " |")
		for _, c := range costs {
			fmt.Fprintf(&b, " %.2f |", f(c))
		}
		b.WriteString("\n")
	}
	line("DynamoDB (writes incl. index writes, reads)", func(c Cost) float64 { return c.DynamoDB })
	line("SQS requests", func(c Cost) float64 { return c.SQS })
	line("Lambda requests (worker + API + notifier)", func(c Cost) float64 { return c.LambdaRequests })
	line("Lambda arm64 GB-s (worker + API + notifier)", func(c Cost) float64 { return c.LambdaCompute })
	line("API Gateway HTTP API requests (creates + polls)", func(c Cost) float64 { return c.APIGateway })
	line(fmt.Sprintf("CloudWatch Logs: Lambda's own lines (%d B per invocation, assumed)", platformLogBytesPerCall), func(c Cost) float64 { return c.PlatformLogs })
	line("CloudWatch Logs: the functions' log lines and EMF metrics (measured)", func(c Cost) float64 { return c.FunctionLogs })
	line("**AWS total**", Cost.Total)
	model := ModelPerMillion()
	line(fmt.Sprintf("model, default route (%d in + %d out tokens)", ExampleInputTokens, ExampleOutputTokens), func(Cost) float64 { return model })
	b.WriteString("| **plumbing share of AWS + model** |")
	for _, c := range costs {
		fmt.Fprintf(&b, " %.1f%% |", 100*c.Total()/(c.Total()+model))
	}
	b.WriteString("\n\n")
	laneReport(&b, names, costs)
	return b.String()
}

// exampleLanes are the lanes of the example route's model spend, as
// multiples of its standard price: batch and flex at the providers'
// published half (OpenAI's flex is priced at its Batch API rates), and
// priority at an example premium of 1.75 (configure your own:
// docs/lanes.md, "Cost lanes").
var exampleLanes = []struct {
	name   string
	factor float64
}{{"batch", 0.5}, {"flex", 0.5}, {"standard", 1}, {"priority", 1.75}}

// laneReport renders, per lane, the example route's model spend and the
// plumbing's share of each run's total in that lane: the lane moves the
// part of the bill that matters. A batch job's plumbing is the same in
// every column: its worker enlists it and returns, waiting on no model
// call, so it costs what the cheapest run's does (the least waiting),
// plus the batch lane's own (BatchLaneExtra).
func laneReport(b *strings.Builder, names []string, costs []Cost) {
	b.WriteString("| lane | model $ per million jobs |")
	for _, n := range names {
		b.WriteString(" plumbing share, " + n + " |")
	}
	b.WriteString("\n|---|---|" + strings.Repeat("---|", len(names)) + "\n")
	cheapest := slices.MinFunc(costs, func(a, b Cost) int { return cmp.Compare(a.Total(), b.Total()) }).Total()
	for _, l := range exampleLanes {
		model := l.factor * ModelPerMillion()
		fmt.Fprintf(b, "| %s (%gx) | %.2f |", l.name, l.factor, model)
		for _, c := range costs {
			plumbing := c.Total()
			if l.name == "batch" {
				plumbing = cheapest + BatchLaneExtra()
			}
			fmt.Fprintf(b, " %.1f%% |", 100*plumbing/(plumbing+model))
		}
		b.WriteString("\n")
	}
}

// The batch lane's own plumbing, per job, from its design
// (docs/lanes.md, "The batch lane"), not measured: the worker's
// enlist and the collector's collect (two writes, each also a write of
// the enlisted index: in, then out), the collector's three reads of the
// job (still waiting, its membership, its settlement; the settlement's
// write replaces the worker's finish). A batch record of 1,000 jobs is
// about 40 KB: written five times (opened and listed, sealed, submitted,
// settled and unlisted: 40 units each) and read once a run while open
// (10 units), an hour here: 0.2 write and 0.6 read units a job. The
// collector's one invocation a minute is a fixed monthly cost, not a
// job's.
const (
	batchWritesPerJob = 4 + 0.2
	batchReadsPerJob  = 3 + 0.6
)

// BatchLaneExtra is the batch lane's own plumbing per million jobs.
func BatchLaneExtra() float64 {
	return 1e6 * (batchWritesPerJob*Prices.DynamoDBWriteUnit + batchReadsPerJob*Prices.DynamoDBReadUnit)
}
