package chaos

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awssqs "github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/aijobs/aijobs/pkg/job"
	"github.com/aijobs/aijobs/pkg/model"
	"github.com/aijobs/aijobs/pkg/model/openai"
)

// Baseline is the naive design the run compares aijobs with: a plain SQS
// consumer. It receives with the queue's default visibility, calls the
// model (the same provider client, the same rung timeout), and deletes the
// message after a successful call; no claim, no lease, no heartbeat. A
// failed call leaves the message to come back when its visibility ends.
// It faces the same schedule: the same jobs and model faults, AWS faults
// on its SQS client, duplicates, crashes when a worker is killed, and
// messages never sent when the API dies.
type Baseline struct {
	SQS      *awssqs.Client
	QueueURL string
	Plans    []JobPlan
	// Stream and Plain are the model clients by kind of route.
	Stream, Plain model.Provider
	Timeout       time.Duration
	Consumers     int

	mu        sync.Mutex
	succeeded map[int]bool
	cancel    context.CancelFunc
	wg        sync.WaitGroup
}

// baselineMessage is the baseline's message: the job's index.
type baselineMessage struct {
	Index int `json:"index"`
}

// newBaselineProviders are the baseline's model clients, with their own
// base URL at the model server.
func newBaselineProviders(modelURL string, rec Receiver) (stream, plain model.Provider, err error) {
	base := modelURL + "/w/baseline/v1"
	hc := &http.Client{Transport: observe(http.DefaultTransport, rec, "baseline")}
	s, err := openai.New(openai.Config{BaseURL: base, Stream: true, HTTPClient: hc})
	if err != nil {
		return nil, nil, err
	}
	p, err := openai.New(openai.Config{BaseURL: base, Stream: false, HTTPClient: hc})
	return s, p, err
}

// Send enqueues job index as the baseline's producer would, retrying a
// failed send as aijobs' clients retry a failed create.
func (b *Baseline) Send(ctx context.Context, index int) error {
	body, _ := json.Marshal(baselineMessage{Index: index})
	var err error
	for try := range 8 {
		if _, err = b.SQS.SendMessage(ctx, &awssqs.SendMessageInput{QueueUrl: aws.String(b.QueueURL), MessageBody: aws.String(string(body))}); err == nil {
			return nil
		}
		if sleep(ctx, time.Duration(200<<min(try, 4))*time.Millisecond) != nil {
			break
		}
	}
	return err
}

// Start runs the consumers until Crash or Stop.
func (b *Baseline) Start() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.succeeded == nil {
		b.succeeded = map[int]bool{}
	}
	ctx, cancel := context.WithCancel(context.Background())
	b.cancel = cancel
	for range b.Consumers {
		b.wg.Add(1)
		go func() {
			defer b.wg.Done()
			b.consume(ctx)
		}()
	}
}

// Crash stops every consumer at once, mid-call: nothing in flight is
// deleted, as when its process is killed.
func (b *Baseline) Crash() {
	b.mu.Lock()
	cancel := b.cancel
	b.mu.Unlock()
	if cancel != nil {
		cancel()
	}
	b.wg.Wait()
}

// Succeeded is how many jobs the baseline finished.
func (b *Baseline) Succeeded() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.succeeded)
}

// SucceededJobs are the indexes of the jobs the baseline finished, for
// the report's split by route.
func (b *Baseline) SucceededJobs() []int {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []int
	for i := range b.succeeded {
		out = append(out, i)
	}
	return out
}

func (b *Baseline) consume(ctx context.Context) {
	for ctx.Err() == nil {
		out, err := b.SQS.ReceiveMessage(ctx, &awssqs.ReceiveMessageInput{QueueUrl: aws.String(b.QueueURL), MaxNumberOfMessages: 1, WaitTimeSeconds: 1})
		if err != nil {
			_ = sleep(ctx, 200*time.Millisecond)
			continue
		}
		for _, m := range out.Messages {
			b.handle(ctx, m)
		}
	}
}

func (b *Baseline) handle(ctx context.Context, m sqstypes.Message) {
	var msg baselineMessage
	if m.Body == nil || json.Unmarshal([]byte(*m.Body), &msg) != nil || msg.Index < 0 || msg.Index >= len(b.Plans) {
		return
	}
	p := b.Plans[msg.Index]
	prov := b.Stream
	if p.Route == "plain" || p.Route == "background" || p.Route == "detached" {
		// Today's naive consumer calls chat completions: it has no id to
		// come back to, so the background route's jobs are plain calls.
		prov = b.Plain
	}
	cctx, cancel := context.WithTimeout(ctx, b.Timeout)
	defer cancel()
	_, err := prov.Generate(cctx, model.Request{JobID: "bl-" + strconv.Itoa(p.Index), Model: "chaos-" + baselineModel(p.Route),
		Messages: []job.Message{{Role: "user", Content: p.Content("bl")}}, MaxTokens: p.MaxTokens})
	if err != nil || ctx.Err() != nil {
		return // the message comes back when its visibility ends
	}
	b.mu.Lock()
	b.succeeded[p.Index] = true
	b.mu.Unlock()
	_, _ = b.SQS.DeleteMessage(ctx, &awssqs.DeleteMessageInput{QueueUrl: aws.String(b.QueueURL), ReceiptHandle: m.ReceiptHandle})
}

// baselineModel is the model the baseline asks for on a route: its first
// rung's, priced the same as aijobs' first rung.
func baselineModel(route string) string {
	switch route {
	case "plain", "background", "detached":
		return route
	case "ladder":
		return "ladder-1"
	}
	return "stream"
}
