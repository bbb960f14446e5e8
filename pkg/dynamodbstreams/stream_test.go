package dynamodbstreams_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	ddb "github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/aijobs/aijobs/internal/awstest"
	"github.com/aijobs/aijobs/pkg/awsclient"
	"github.com/aijobs/aijobs/pkg/devserver"
	"github.com/aijobs/aijobs/pkg/dynamodb"
	"github.com/aijobs/aijobs/pkg/dynamodbstreams"
	"github.com/aijobs/aijobs/pkg/settings"
)

func TestMain(m *testing.M) { os.Exit(awstest.Main(m)) }

// newStream creates a jobs table as the dev server does and finds its
// stream.
func newStream(t *testing.T) (*ddb.Client, string, *dynamodbstreams.Stream) {
	t.Helper()
	cfg := awstest.Config(t, nil)
	c := awsclient.DynamoDB(cfg)
	table := awstest.Prefix(t)
	if err := dynamodb.CreateTable(t.Context(), c, table, settings.Defaults()); err != nil {
		t.Fatal(err)
	}
	s, err := dynamodbstreams.Find(t.Context(), c, dynamodbstreams.NewClient(cfg), table)
	if err != nil {
		t.Fatal(err)
	}
	return c, table, s
}

func s(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
func n(v string) types.AttributeValue { return &types.AttributeValueMemberN{Value: v} }

func put(t *testing.T, c *ddb.Client, table string, item map[string]types.AttributeValue) {
	t.Helper()
	if _, err := c.PutItem(t.Context(), &ddb.PutItemInput{TableName: aws.String(table), Item: item}); err != nil {
		t.Fatal(err)
	}
}

func update(t *testing.T, c *ddb.Client, table, id, state string) {
	t.Helper()
	_, err := c.UpdateItem(t.Context(), &ddb.UpdateItemInput{TableName: aws.String(table), Key: map[string]types.AttributeValue{"id": s(id)},
		UpdateExpression: aws.String("SET #s = :s"), ExpressionAttributeNames: map[string]string{"#s": "state"},
		ExpressionAttributeValues: map[string]types.AttributeValue{":s": s(state)}})
	if err != nil {
		t.Fatal(err)
	}
}

// readAll reads every shard of the stream from its oldest record.
func readAll(t *testing.T, st *dynamodbstreams.Stream, want int) []events.DynamoDBEventRecord {
	t.Helper()
	shards, err := st.Shards(t.Context())
	if err != nil || len(shards) == 0 {
		t.Fatalf("shards %v: %v", shards, err)
	}
	var out []events.DynamoDBEventRecord
	for shard := range shards {
		it, err := st.Iterator(t.Context(), shard, "")
		if err != nil {
			t.Fatal(err)
		}
		for it != "" && len(out) < want {
			recs, next, err := st.Records(t.Context(), it, 100)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, recs...)
			if len(recs) == 0 {
				break
			}
			it = next
		}
	}
	return out
}

func image(t *testing.T, m map[string]events.DynamoDBAttributeValue) string {
	t.Helper()
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestRecordsAsLambdaDelivers: an insert, a modify and a remove on the
// jobs table come out of its stream as the records Lambda hands a
// function (https://docs.aws.amazon.com/lambda/latest/dg/with-ddb.html,
// "Example event"): eventName, eventSource aws:dynamodb, eventSourceARN
// the stream's ARN, the keys and both images in DynamoDB's JSON with
// every attribute type, ascending sequence numbers, NEW_AND_OLD_IMAGES.
func TestRecordsAsLambdaDelivers(t *testing.T) {
	c, table, st := newStream(t)
	put(t, c, table, map[string]types.AttributeValue{
		"id": s("j1"), "state": s("queued"), "n": n("42"), "b": &types.AttributeValueMemberB{Value: []byte{0, 1, 2}},
		"ok": &types.AttributeValueMemberBOOL{Value: true}, "nil": &types.AttributeValueMemberNULL{Value: true},
		"ss": &types.AttributeValueMemberSS{Value: []string{"x"}}, "ns": &types.AttributeValueMemberNS{Value: []string{"7"}},
		"bs": &types.AttributeValueMemberBS{Value: [][]byte{{9}}},
		"l":  &types.AttributeValueMemberL{Value: []types.AttributeValue{s("a"), n("1")}},
		"m":  &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{"k": s("v"), "in": &types.AttributeValueMemberL{}}},
	})
	update(t, c, table, "j1", "running")
	if _, err := c.DeleteItem(t.Context(), &ddb.DeleteItemInput{TableName: aws.String(table), Key: map[string]types.AttributeValue{"id": s("j1")}}); err != nil {
		t.Fatal(err)
	}
	recs := readAll(t, st, 3)
	if len(recs) != 3 {
		t.Fatalf("%d records, want 3: %+v", len(recs), recs)
	}
	for i, r := range recs {
		if r.EventName != []string{"INSERT", "MODIFY", "REMOVE"}[i] || r.EventSource != "aws:dynamodb" || r.EventSourceArn != st.ARN() ||
			!strings.Contains(st.ARN(), "/stream/") || r.AWSRegion == "" || r.EventID == "" || r.EventVersion == "" {
			t.Errorf("record %d: %+v", i, r)
		}
		if r.Change.StreamViewType != "NEW_AND_OLD_IMAGES" || r.Change.SequenceNumber == "" || r.Change.SizeBytes <= 0 ||
			r.Change.ApproximateCreationDateTime.IsZero() {
			t.Errorf("record %d: change %+v", i, r.Change)
		}
		if got := image(t, r.Change.Keys); got != `{"id":{"S":"j1"}}` {
			t.Errorf("record %d: keys %s", i, got)
		}
		if i > 0 && r.Change.SequenceNumber <= recs[i-1].Change.SequenceNumber {
			t.Errorf("sequence numbers %s then %s", recs[i-1].Change.SequenceNumber, r.Change.SequenceNumber)
		}
	}
	full := `{"b":{"B":"AAEC"},"bs":{"BS":["CQ=="]},"id":{"S":"j1"},"l":{"L":[{"S":"a"},{"N":"1"}]},` +
		`"m":{"M":{"in":{"L":[]},"k":{"S":"v"}}},"n":{"N":"42"},"nil":{"NULL":true},"ns":{"NS":["7"]},"ok":{"BOOL":true},` +
		`"ss":{"SS":["x"]},"state":{"S":"%s"}}`
	for i, w := range []struct{ old, new string }{
		{"null", strings.Replace(full, "%s", "queued", 1)},
		{strings.Replace(full, "%s", "queued", 1), strings.Replace(full, "%s", "running", 1)},
		{strings.Replace(full, "%s", "running", 1), "null"},
	} {
		if got := image(t, recs[i].Change.OldImage); got != w.old {
			t.Errorf("%s old image\n%s\nwant\n%s", recs[i].EventName, got, w.old)
		}
		if got := image(t, recs[i].Change.NewImage); got != w.new {
			t.Errorf("%s new image\n%s\nwant\n%s", recs[i].EventName, got, w.new)
		}
	}
}

// TestFindWithoutStream: a table created before the stream was asked for
// has none, and Find says what to do instead of returning a stream that
// never delivers.
func TestFindWithoutStream(t *testing.T) {
	cfg := awstest.Config(t, nil)
	c := awsclient.DynamoDB(cfg)
	table := awstest.Prefix(t)
	_, err := c.CreateTable(t.Context(), &ddb.CreateTableInput{TableName: aws.String(table), BillingMode: types.BillingModePayPerRequest,
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("id"), AttributeType: types.ScalarAttributeTypeS}},
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("id"), KeyType: types.KeyTypeHash}}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = dynamodbstreams.Find(t.Context(), c, dynamodbstreams.NewClient(cfg), table)
	if err == nil || !strings.Contains(err.Error(), "has no stream") {
		t.Fatalf("Find on a table without a stream: %v", err)
	}
}

// TestStreamPollerOverKumo: the dev server's stream event source mapping
// over the real stream API delivers the table's changes in order with
// their images, and after a reported batch item failure delivers again
// from that record on, and only from there
// (https://docs.aws.amazon.com/lambda/latest/dg/services-ddb-batchfailurereporting.html).
func TestStreamPollerOverKumo(t *testing.T) {
	c, table, st := newStream(t)
	var mu sync.Mutex
	var batches [][]events.DynamoDBEventRecord
	p := &devserver.StreamPoller{Source: st, BatchSize: 10, BatchWindow: 300 * time.Millisecond, FunctionTimeout: 2 * time.Second,
		MaxRetries: -1, RetryBackoff: 50 * time.Millisecond, PollEvery: 50 * time.Millisecond, DiscoverEvery: 200 * time.Millisecond,
		Logger: slog.New(slog.DiscardHandler),
		Handler: func(ctx context.Context, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
			mu.Lock()
			defer mu.Unlock()
			batches = append(batches, ev.Records)
			if len(batches) == 1 && len(ev.Records) > 1 {
				return events.DynamoDBEventResponse{BatchItemFailures: []events.DynamoDBBatchItemFailure{
					{ItemIdentifier: ev.Records[1].Change.SequenceNumber}}}, nil
			}
			return events.DynamoDBEventResponse{}, nil
		}}
	put(t, c, table, map[string]types.AttributeValue{"id": s("j1"), "state": s("queued")})
	update(t, c, table, "j1", "running")
	update(t, c, table, "j1", "succeeded")
	put(t, c, table, map[string]types.AttributeValue{"id": s("j2"), "state": s("queued")})
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan struct{})
	go func() { p.Run(ctx); close(stopped) }()
	defer func() {
		cancel()
		<-stopped
	}()

	deadline := time.Now().Add(10 * time.Second)
	delivered := func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(slices.Concat(batches...))
	}
	for delivered() < 7 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	time.Sleep(300 * time.Millisecond) // room for a wrong extra delivery
	mu.Lock()
	got := slices.Concat(batches...)
	mu.Unlock()

	type change struct{ name, id, old, new string }
	state := func(m map[string]events.DynamoDBAttributeValue) string {
		if v, ok := m["state"]; ok {
			return v.String()
		}
		return "-"
	}
	var have []change
	for _, r := range got {
		have = append(have, change{r.EventName, r.Change.Keys["id"].String(), state(r.Change.OldImage), state(r.Change.NewImage)})
	}
	all := []change{{"INSERT", "j1", "-", "queued"}, {"MODIFY", "j1", "queued", "running"}, {"MODIFY", "j1", "running", "succeeded"},
		{"INSERT", "j2", "-", "queued"}}
	// The first batch holds all four; after the failure at its second
	// record, everything from there comes again.
	want := append(slices.Clone(all), all[1:]...)
	if !slices.Equal(have, want) {
		t.Fatalf("delivered\n%v\nwant\n%v", have, want)
	}
}
