package bench

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsddb "github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	awssqs "github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/aijobs/aijobs/pkg/awsclient"
)

// Ceiling drives the happy path's AWS call mix straight at the emulator,
// with no aijobs code between, at the end-to-end run's concurrency: each
// of o.Concurrency clients puts an item (conditional, as a create) and
// sends its id, then every o.PollEvery reads the item (consistent) until
// it is done; o.MaxConcurrency consumers long-poll the queue for up to
// o.BatchSize messages and, for each message at once, hide it
// (ChangeMessageVisibility, as the claim does), claim the item and finish
// it (two conditional UpdateItems), then delete the batch in one call. Its
// jobs/s is what the emulator allows for that mix: the end-to-end figure's
// ceiling on this machine.
func Ceiling(ctx context.Context, o Options) (Result, error) {
	if o.BatchSize == 0 {
		o.BatchSize = 10
	}
	if o.MaxConcurrency == 0 {
		o.MaxConcurrency = 8
	}
	counter := awsclient.NewCounter()
	cfg, err := awsclient.Load(ctx, awsclient.Config{Region: "us-east-1", Endpoint: o.Endpoint, Counter: counter})
	if err != nil {
		return Result{}, err
	}
	db, q := awsclient.DynamoDB(cfg), awsclient.SQS(cfg)
	name := fmt.Sprintf("ceiling-%d", time.Now().UnixNano())
	if _, err := db.CreateTable(ctx, &awsddb.CreateTableInput{TableName: aws.String(name), BillingMode: ddbtypes.BillingModePayPerRequest,
		AttributeDefinitions: []ddbtypes.AttributeDefinition{{AttributeName: aws.String("id"), AttributeType: ddbtypes.ScalarAttributeTypeS}},
		KeySchema:            []ddbtypes.KeySchemaElement{{AttributeName: aws.String("id"), KeyType: ddbtypes.KeyTypeHash}}}); err != nil {
		return Result{}, fmt.Errorf("ceiling: create table: %w", err)
	}
	qo, err := q.CreateQueue(ctx, &awssqs.CreateQueueInput{QueueName: aws.String(name)})
	if err != nil {
		return Result{}, fmt.Errorf("ceiling: create queue: %w", err)
	}
	c := ceiling{db: db, q: q, table: name, url: *qo.QueueUrl, batch: o.BatchSize}
	counter.Reset()

	cctx, stop := context.WithCancel(ctx)
	var consumers sync.WaitGroup
	for range o.MaxConcurrency {
		consumers.Add(1)
		go func() {
			defer consumers.Done()
			c.consume(cctx)
		}()
	}
	res := Result{Jobs: o.Jobs}
	var mu sync.Mutex
	var firstErr error
	var clients sync.WaitGroup
	sem := make(chan struct{}, o.Concurrency)
	start := time.Now()
	for i := range o.Jobs {
		clients.Add(1)
		sem <- struct{}{}
		go func() {
			defer clients.Done()
			defer func() { <-sem }()
			polls, err := c.job(ctx, strconv.Itoa(i), o.PollEvery)
			mu.Lock()
			defer mu.Unlock()
			res.Polls += polls
			if err != nil {
				res.NotSucceeded++
				if firstErr == nil {
					firstErr = err
				}
			}
		}()
	}
	clients.Wait()
	res.Elapsed = time.Since(start)
	stop()
	consumers.Wait()
	res.Calls = counter.Snapshot()
	res.GetItems.Consistent, res.GetItems.Eventual = counter.GetItems()
	return res, firstErr
}

type ceiling struct {
	db    *awsddb.Client
	q     *awssqs.Client
	table string
	url   string
	batch int
}

// body is about the size of a job's input in the end-to-end run.
const body = `{"messages":[{"role":"user","content":"benchmark job 000"}],"max_tokens":16}`

func (c ceiling) job(ctx context.Context, id string, every time.Duration) (int, error) {
	_, err := c.db.PutItem(ctx, &awsddb.PutItemInput{TableName: aws.String(c.table), ConditionExpression: aws.String("attribute_not_exists(id)"),
		Item: map[string]ddbtypes.AttributeValue{"id": s(id), "state": s("queued"), "tenant": s("bench"), "input": s(body),
			"created_ms": n(time.Now().UnixMilli())}})
	if err != nil {
		return 0, fmt.Errorf("ceiling: put: %w", err)
	}
	if _, err := c.q.SendMessage(ctx, &awssqs.SendMessageInput{QueueUrl: aws.String(c.url), MessageBody: aws.String(id)}); err != nil {
		return 0, fmt.Errorf("ceiling: send: %w", err)
	}
	for polls := 1; polls <= 5000; polls++ {
		time.Sleep(every)
		out, err := c.db.GetItem(ctx, &awsddb.GetItemInput{TableName: aws.String(c.table), ConsistentRead: aws.Bool(true),
			Key: map[string]ddbtypes.AttributeValue{"id": s(id)}})
		if err != nil {
			return polls, fmt.Errorf("ceiling: get: %w", err)
		}
		if st, ok := out.Item["state"].(*ddbtypes.AttributeValueMemberS); ok && st.Value == "succeeded" {
			return polls, nil
		}
	}
	return 5000, fmt.Errorf("ceiling: job %s never finished", id)
}

func (c ceiling) consume(ctx context.Context) {
	for ctx.Err() == nil {
		out, err := c.q.ReceiveMessage(ctx, &awssqs.ReceiveMessageInput{QueueUrl: aws.String(c.url),
			MaxNumberOfMessages: int32(c.batch), WaitTimeSeconds: 2})
		if err != nil || len(out.Messages) == 0 {
			continue
		}
		var wg sync.WaitGroup
		done := make([]sqstypes.DeleteMessageBatchRequestEntry, len(out.Messages))
		for i, m := range out.Messages {
			done[i] = sqstypes.DeleteMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), ReceiptHandle: m.ReceiptHandle}
			wg.Add(1)
			go func() {
				defer wg.Done()
				c.process(ctx, m)
			}()
		}
		wg.Wait()
		_, _ = c.q.DeleteMessageBatch(context.WithoutCancel(ctx), &awssqs.DeleteMessageBatchInput{QueueUrl: aws.String(c.url), Entries: done})
	}
}

func (c ceiling) process(ctx context.Context, m sqstypes.Message) {
	_, _ = c.q.ChangeMessageVisibility(ctx, &awssqs.ChangeMessageVisibilityInput{QueueUrl: aws.String(c.url),
		ReceiptHandle: m.ReceiptHandle, VisibilityTimeout: 60})
	key := map[string]ddbtypes.AttributeValue{"id": s(*m.Body)}
	for _, step := range [][2]string{{"queued", "running"}, {"running", "succeeded"}} {
		_, _ = c.db.UpdateItem(ctx, &awsddb.UpdateItemInput{TableName: aws.String(c.table), Key: key,
			ConditionExpression: aws.String("#s = :from"), UpdateExpression: aws.String("SET #s = :to, updated_ms = :now"),
			ExpressionAttributeNames:  map[string]string{"#s": "state"},
			ExpressionAttributeValues: map[string]ddbtypes.AttributeValue{":from": s(step[0]), ":to": s(step[1]), ":now": n(time.Now().UnixMilli())}})
	}
}

func s(v string) ddbtypes.AttributeValue { return &ddbtypes.AttributeValueMemberS{Value: v} }
func n(v int64) ddbtypes.AttributeValue {
	return &ddbtypes.AttributeValueMemberN{Value: strconv.FormatInt(v, 10)}
}
