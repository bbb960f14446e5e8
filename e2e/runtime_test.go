package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	awsddb "github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	awssqs "github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/aijobs/aijobs/internal/awstest"
	"github.com/aijobs/aijobs/pkg/app"
	"github.com/aijobs/aijobs/pkg/awsclient"
	"github.com/aijobs/aijobs/pkg/config"
	"github.com/aijobs/aijobs/pkg/job"
	"github.com/aijobs/aijobs/pkg/reconciler"
	"github.com/aijobs/aijobs/pkg/sqs"
	"github.com/aijobs/aijobs/pkg/webhook"
)

// The functions the stack deploys, each a main under functions/ that
// wire.Lambda serves through aws-lambda-go's runtime API client.
var rieFunctions = []string{"api", "worker", "notifier", "reconciler"}

// rieBin is AWS's Lambda Runtime Interface Emulator, which make test
// builds and names in RIE_BIN. Without it the test fails: a skip would
// read as the functions' runtime loop having been shown.
func rieBin(t *testing.T) string {
	t.Helper()
	p := os.Getenv("RIE_BIN")
	if p == "" {
		t.Fatal("RIE_BIN is not set: build AWS's Lambda runtime interface emulator with `make bin/aws-lambda-rie` and set RIE_BIN=$PWD/bin/aws-lambda-rie (make test does both)")
	}
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("RIE_BIN=%s: %v; build it with `make bin/aws-lambda-rie`", p, err)
	}
	return p
}

// buildBootstraps builds every function as the stack does (lambda.norpc,
// static) but for this machine, so the emulator can run it; in parallel,
// since the links are most of the test's time. The collector, which runs
// on a route with a batch lane, is started by its own step.
func buildBootstraps(t *testing.T) map[string]string {
	t.Helper()
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	out := map[string]string{}
	built := append(slices.Clone(rieFunctions), "collector")
	errs := make([]error, len(built))
	var wg sync.WaitGroup
	for i, f := range built {
		bin := filepath.Join(dir, f, "bootstrap")
		out[f] = bin
		wg.Add(1)
		go func() {
			defer wg.Done()
			cmd := exec.Command("go", "build", "-tags", "lambda.norpc", "-trimpath", "-o", bin, "./functions/"+f)
			cmd.Dir = root
			cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS="+runtime.GOOS, "GOARCH="+runtime.GOARCH)
			if b, err := cmd.CombinedOutput(); err != nil {
				errs[i] = fmt.Errorf("build %s: %v\n%s", f, err, b)
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// rieResources creates the table, queues, bucket and signing secret as
// the dev server does, and returns them with the environment the stack
// gives its functions (the resources' URLs, callbacks on, EMF metrics).
func rieResources(t *testing.T) (*app.App, map[string]string) {
	t.Helper()
	env := testEnv(awstest.Prefix(t), awstest.Endpoint(t))
	delete(env, "AIJOBS_LISTEN")
	env["AIJOBS_CALLBACKS"], env["AIJOBS_METRICS"] = "true", "emf"
	cfg, err := config.Load(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	a, err := app.New(ctx, cfg, app.Options{CreateResources: true, Logger: app.Logger("error")})
	if err != nil {
		t.Fatal(err)
	}
	c := a.Config
	env["AIJOBS_TABLE"], env["AIJOBS_QUEUE_URL"], env["AIJOBS_DLQ_URL"] = c.Table, c.QueueURL, c.DLQURL
	env["AIJOBS_CALLBACK_QUEUE_URL"], env["AIJOBS_CALLBACK_DLQ_URL"] = c.CallbackQueueURL, c.CallbackDLQURL
	env["AIJOBS_PARK_BUCKET"], env["AIJOBS_WEBHOOK_SECRET_ID"] = c.ParkBucket, c.WebhookSecretID
	env["AIJOBS_TENANTS_TABLE"], env["AIJOBS_QUARANTINE_TABLE"] = c.TenantsTable, c.QuarantineTable
	// Lambda gives a function its role's credentials in these three; the
	// functions read them (awsclient.Env), not the SDK's default chain.
	for _, k := range []string{"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"} {
		if v := os.Getenv(k); v != "" {
			env[k] = v
		}
	}
	return a, env
}

// lockedBuffer collects a process's output while the test reads it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// rieFunction is one function's bootstrap under its own aws-lambda-rie.
type rieFunction struct {
	name string
	url  string
	out  *lockedBuffer
}

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// startRIE runs bootstrap under the emulator, which serves Lambda's
// Invoke API on one free loopback port and the runtime API the bootstrap
// polls on another (its default, 9001, would collide between functions).
// The environment is env alone, as in Lambda, plus the function's timeout.
func startRIE(t *testing.T, rie, name, bootstrap string, env map[string]string, timeout time.Duration) *rieFunction {
	t.Helper()
	addr := freeAddr(t)
	cmd := exec.Command(rie, "--runtime-interface-emulator-address", addr, "--runtime-api-address", freeAddr(t), bootstrap)
	cmd.Dir = filepath.Dir(bootstrap)
	cmd.Env = []string{"AWS_LAMBDA_FUNCTION_NAME=aijobs-" + name, "AWS_LAMBDA_FUNCTION_MEMORY_SIZE=256",
		fmt.Sprintf("AWS_LAMBDA_FUNCTION_TIMEOUT=%d", int(timeout.Seconds()))}
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	f := &rieFunction{name: name, url: "http://" + addr + "/2015-03-31/functions/function/invocations", out: &lockedBuffer{}}
	cmd.Stdout, cmd.Stderr = f.out, f.out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		// RIE_DUMP=1 shows it on a pass too: rapid's INIT and REPORT
		// lines, the function's JSON logs and EMF metrics.
		if t.Failed() || os.Getenv("RIE_DUMP") != "" {
			t.Logf("aws-lambda-rie %s output:\n%s", name, f.out)
		}
	})
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if c, err := net.Dial("tcp", addr); err == nil {
			_ = c.Close()
			return f
		}
		if time.Now().After(deadline) {
			t.Fatalf("aws-lambda-rie %s: not listening on %s after 10s:\n%s", name, addr, f.out)
		}
	}
}

// invoke sends event as Lambda's Invoke API does and decodes the
// function's answer into out; a function error (the runtime API's
// /error, which the emulator answers with an errorType body) fails.
func (f *rieFunction) invoke(t *testing.T, event, out any) time.Duration {
	t.Helper()
	body, err := json.Marshal(event)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	resp, err := http.Post(f.url, "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatalf("invoke %s: %v\n%s", f.name, err, f.out)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	took := time.Since(start)
	var fnErr struct {
		Type    string `json:"errorType"`
		Message string `json:"errorMessage"`
	}
	_ = json.Unmarshal(raw, &fnErr)
	if resp.StatusCode != http.StatusOK || fnErr.Type != "" || fnErr.Message != "" {
		t.Fatalf("invoke %s: %d %s\n%s", f.name, resp.StatusCode, raw, f.out)
	}
	if err := json.Unmarshal(raw, out); err != nil {
		t.Fatalf("invoke %s: answer %s: %v", f.name, raw, err)
	}
	return took
}

// TestEveryFunctionUnderAWSLambdaRuntimeEmulator runs each function's
// real bootstrap under AWS's Runtime Interface Emulator against the
// test's emulator, and invokes it with the events its trigger sends:
// API Gateway's HTTP API v2 requests, an SQS batch with a poison message,
// a table stream batch then a callback queue batch, the schedule's
// event. Elsewhere the handlers only run in process (the dev server) and
// the binaries only meet a stand-in of the runtime API (the cold-start
// benchmark), so this is where wire.Lambda's real loop, the lambda.norpc
// build, the environment-only configuration and the events' JSON as the
// runtime hands it over are shown to work together.
func TestEveryFunctionUnderAWSLambdaRuntimeEmulator(t *testing.T) {
	t.Parallel()
	rie := rieBin(t)
	start := time.Now()
	bins := buildBootstraps(t)
	t.Logf("built the five bootstraps for %s/%s in %s", runtime.GOOS, runtime.GOARCH, time.Since(start).Round(time.Millisecond))
	a, env := rieResources(t)
	timeouts := map[string]time.Duration{"api": 10 * time.Second, "worker": a.Config.Settings.WorkerTimeout,
		"notifier": a.Config.Settings.NotifierTimeout, "reconciler": 60 * time.Second}
	fns := map[string]*rieFunction{}
	for _, f := range rieFunctions {
		fns[f] = startRIE(t, rie, f, bins[f], env, timeouts[f])
	}
	r := &rieRun{a: a, sqs: awsclient.SQS(a.AWS), ddb: awsclient.DynamoDB(a.AWS), fns: fns, rcv: rieReceiver(t, fns["api"], "tenant-rie")}
	for _, step := range []struct {
		name string
		run  func(t *testing.T)
	}{{"api", r.api}, {"worker", r.worker}, {"notifier", r.notifier}, {"reconciler", r.reconciler},
		{"collector", func(t *testing.T) { r.collector(t, rie, bins["collector"], env) }}} {
		if !t.Run(step.name, step.run) {
			return
		}
	}
	var inits []string
	for _, f := range rieFunctions {
		// The emulator writes its report lines as it goes, and under load
		// after the invocation's answer: give them a moment.
		m := rieInitReport.FindStringSubmatch(fns[f].out.String())
		for wait := time.Now().Add(5 * time.Second); m == nil && time.Now().Before(wait); m = rieInitReport.FindStringSubmatch(fns[f].out.String()) {
			time.Sleep(50 * time.Millisecond)
		}
		if m == nil {
			t.Fatalf("%s: no INIT REPORT in the emulator's output:\n%s", f, fns[f].out)
		}
		inits = append(inits, f+" "+m[1]+" ms")
	}
	t.Logf("Init as aws-lambda-rie reports it (exec to the first GET /next): %s", strings.Join(inits, ", "))
}

// rieReceiver is tenant's receiver, configured with the signing key the
// API function under the emulator answers GET /webhook-key with (its first
// invocation, init included). It lives as long as the whole test, since
// the notifier step delivers to it.
func rieReceiver(t *testing.T, api *rieFunction, tenant string) *receiver {
	t.Helper()
	var got events.APIGatewayV2HTTPResponse
	took := api.invoke(t, httpEvent("GET", "/webhook-key", tenant, nil, ""), &got)
	var key struct {
		Secret string `json:"secret"`
	}
	if err := json.Unmarshal([]byte(got.Body), &key); got.StatusCode != http.StatusOK || err != nil || key.Secret == "" {
		t.Fatalf("GET /webhook-key: %d %s", got.StatusCode, got.Body)
	}
	secret, err := webhook.ParseSecret(key.Secret)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("GET /webhook-key 200 in %s (the first invocation: init included)", took.Round(time.Millisecond))
	return newReceiverWith(t, secret)
}

// rieInitReport is rapid's line for a function's Init phase.
var rieInitReport = regexp.MustCompile(`INIT REPORT\(durationMs: ([0-9.]+)\)`)

// rieRun is the state the steps pass on: the job the API created flows
// through the worker and the notifier.
type rieRun struct {
	a   *app.App
	sqs *awssqs.Client
	ddb *awsddb.Client
	fns map[string]*rieFunction
	rcv *receiver
	id  string
}

// httpEvent is API Gateway's HTTP API v2 event for a request that the
// stack's JWT authorizer let through with the tenant as claim sub, as the
// dev server's gateway builds it (lower-case headers, $default route).
func httpEvent(method, path, tenant string, headers map[string]string, body string) events.APIGatewayV2HTTPRequest {
	h := map[string]string{"host": "api.example.test", "user-agent": "e2e"}
	for k, v := range headers {
		h[strings.ToLower(k)] = v
	}
	now := time.Now()
	return events.APIGatewayV2HTTPRequest{
		Version: "2.0", RouteKey: "$default", RawPath: path, Headers: h, Body: body,
		RequestContext: events.APIGatewayV2HTTPRequestContext{
			RouteKey: "$default", AccountID: "000000000000", Stage: "$default", RequestID: fmt.Sprintf("rie-%d", now.UnixNano()),
			Time: now.UTC().Format("02/Jan/2006:15:04:05 -0700"), TimeEpoch: now.UnixMilli(),
			HTTP: events.APIGatewayV2HTTPRequestContextHTTPDescription{Method: method, Path: path, Protocol: "HTTP/1.1", SourceIP: "127.0.0.1", UserAgent: "e2e"},
			Authorizer: &events.APIGatewayV2HTTPRequestContextAuthorizerDescription{
				JWT: &events.APIGatewayV2HTTPRequestContextAuthorizerJWTDescription{Claims: map[string]string{"sub": tenant}},
			},
		},
	}
}

// api: POST /jobs with a callback is answered 202 and records a queued
// job with its message on the queue; GET /jobs/{id} reads it back.
func (r *rieRun) api(t *testing.T) {
	fn := r.fns["api"]
	body := jobBody("under the runtime emulator", fmt.Sprintf(`"callback_url":%q`, r.rcv.srv.URL+"/hook"))
	var created events.APIGatewayV2HTTPResponse
	took := fn.invoke(t, httpEvent("POST", "/jobs", "tenant-rie", map[string]string{"Content-Type": "application/json", "Idempotency-Key": "rie-1"}, body), &created)
	var view map[string]any
	if err := json.Unmarshal([]byte(created.Body), &view); created.StatusCode != http.StatusAccepted || err != nil {
		t.Fatalf("POST /jobs: %d %s", created.StatusCode, created.Body)
	}
	r.id, _ = view["id"].(string)
	if r.id == "" || view["state"] != "queued" || !strings.Contains(created.Headers["Location"]+created.Headers["location"], r.id) {
		t.Fatalf("POST /jobs: %v %s", created.Headers, created.Body)
	}
	t.Logf("POST /jobs 202 in %s (the first invocation after GET /webhook-key)", took.Round(time.Millisecond))
	var got events.APIGatewayV2HTTPResponse
	took = fn.invoke(t, httpEvent("GET", "/jobs/"+r.id, "tenant-rie", nil, ""), &got)
	if err := json.Unmarshal([]byte(got.Body), &view); got.StatusCode != http.StatusOK || err != nil || view["id"] != r.id || view["state"] != "queued" {
		t.Fatalf("GET /jobs/%s: %d %s", r.id, got.StatusCode, got.Body)
	}
	t.Logf("GET /jobs/{id} 200 in %s", took.Round(time.Millisecond))
	// Another tenant's token finds nothing: the tenant is the authorizer's.
	if fn.invoke(t, httpEvent("GET", "/jobs/"+r.id, "tenant-other", nil, ""), &got); got.StatusCode != http.StatusNotFound {
		t.Fatalf("GET /jobs/%s as another tenant: %d %s", r.id, got.StatusCode, got.Body)
	}
	j, err := r.a.Store.Get(t.Context(), r.id)
	if err != nil || j.State != "queued" || j.Callback.URL == "" {
		t.Fatalf("the recorded job: %+v %v", j, err)
	}
}

// receiveAll long-polls url until it has want messages (attributes
// included, as Lambda's event source mapping asks for them) or 10 s pass.
func (r *rieRun) receiveAll(t *testing.T, url string, want int) []sqstypes.Message {
	t.Helper()
	var got []sqstypes.Message
	for deadline := time.Now().Add(10 * time.Second); len(got) < want && time.Now().Before(deadline); {
		out, err := r.sqs.ReceiveMessage(t.Context(), &awssqs.ReceiveMessageInput{QueueUrl: aws.String(url), MaxNumberOfMessages: 10, WaitTimeSeconds: 1,
			MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{sqstypes.MessageSystemAttributeNameAll}, MessageAttributeNames: []string{"All"}})
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, out.Messages...)
	}
	if len(got) != want {
		t.Fatalf("%s: %d messages, want %d", url, len(got), want)
	}
	return got
}

// sqsEvent is the event source mapping's batch of msgs from queueURL.
func (r *rieRun) sqsEvent(t *testing.T, queueURL string, msgs []sqstypes.Message) events.SQSEvent {
	t.Helper()
	out, err := r.sqs.GetQueueAttributes(t.Context(), &awssqs.GetQueueAttributesInput{QueueUrl: aws.String(queueURL),
		AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameQueueArn}})
	if err != nil {
		t.Fatal(err)
	}
	var ev events.SQSEvent
	for _, m := range msgs {
		attrs := map[string]events.SQSMessageAttribute{}
		for k, v := range m.MessageAttributes {
			attrs[k] = events.SQSMessageAttribute{StringValue: v.StringValue, DataType: aws.ToString(v.DataType)}
		}
		ev.Records = append(ev.Records, events.SQSMessage{MessageId: aws.ToString(m.MessageId), ReceiptHandle: aws.ToString(m.ReceiptHandle),
			Body: aws.ToString(m.Body), Md5OfBody: aws.ToString(m.MD5OfBody), Attributes: m.Attributes, MessageAttributes: attrs,
			EventSource: "aws:sqs", EventSourceARN: out.Attributes[string(sqstypes.QueueAttributeNameQueueArn)], AWSRegion: "us-east-1"})
	}
	return ev
}

// settle does what the event source mapping does with the answer: it
// deletes every message not reported as a batch item failure.
func (r *rieRun) settle(t *testing.T, queueURL string, ev events.SQSEvent, resp events.SQSEventResponse) {
	t.Helper()
	failed := map[string]bool{}
	for _, f := range resp.BatchItemFailures {
		failed[f.ItemIdentifier] = true
	}
	for _, m := range ev.Records {
		if failed[m.MessageId] {
			continue
		}
		if _, err := r.sqs.DeleteMessage(t.Context(), &awssqs.DeleteMessageInput{QueueUrl: aws.String(queueURL), ReceiptHandle: aws.String(m.ReceiptHandle)}); err != nil {
			t.Fatal(err)
		}
	}
}

// seedJob records a queued job created age ago, as if by the API, without
// its message.
func (r *rieRun) seedJob(t *testing.T, key string, age time.Duration) job.Job {
	t.Helper()
	at := job.Millis(time.Now().Add(-age))
	in, _ := json.Marshal(job.Input{Messages: []job.Message{{Role: "user", Content: key}}, MaxTokens: 20})
	j := job.Job{ID: job.NewID("jwt:tenant-rie", key), Tenant: "jwt:tenant-rie", RequestKey: key, InputHash: seededHash(t, in), Model: "default",
		Input: in, State: job.Queued, MaxAttempts: 3, Budget: job.Cents(1), Deadline: at.Add(time.Hour), Version: 1, CreatedAt: at, UpdatedAt: at}
	if _, err := r.a.Store.Create(t.Context(), j); err != nil {
		t.Fatal(err)
	}
	return j
}

func (r *rieRun) send(t *testing.T, url, body string) {
	t.Helper()
	if _, err := r.sqs.SendMessage(t.Context(), &awssqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String(body)}); err != nil {
		t.Fatal(err)
	}
}

// worker: one batch of the API's job, a job another worker holds under a
// live lease, and a poison message. The job succeeds on the fake model;
// the held one's message is the batch's one item failure (kept, hidden
// until the lease ends); the poison message is dead-lettered by the
// worker itself, with its reason, and not reported.
func (r *rieRun) worker(t *testing.T) {
	const poison = "not a job id"
	q := r.a.Config.QueueURL
	held := r.seedJob(t, "held", 0)
	now := time.Now()
	if _, err := r.a.Store.Claim(t.Context(), job.Claim{ID: held.ID, Owner: "another-worker", Now: now, LeaseUntil: now.Add(20 * time.Second)}); err != nil {
		t.Fatal(err)
	}
	r.send(t, q, `{"job_id":"`+held.ID+`"}`)
	r.send(t, q, poison)
	ev := r.sqsEvent(t, q, r.receiveAll(t, q, 3))
	var raw json.RawMessage
	took := r.fns["worker"].invoke(t, ev, &raw)
	var resp events.SQSEventResponse
	if err := json.Unmarshal(raw, &resp); err != nil || !bytes.Contains(raw, []byte(`"batchItemFailures":[{"itemIdentifier":`)) {
		t.Fatalf("worker answer %s: not a partial batch response (%v)", raw, err)
	}
	heldMsg := ""
	for _, m := range ev.Records {
		if strings.Contains(m.Body, held.ID) {
			heldMsg = m.MessageId
		}
	}
	if len(resp.BatchItemFailures) != 1 || resp.BatchItemFailures[0].ItemIdentifier != heldMsg {
		t.Fatalf("batch item failures %s, want only the held job's message %s", raw, heldMsg)
	}
	r.settle(t, q, ev, resp)
	t.Logf("worker batch of 3 (a job, a held job, a poison message) in %s: %s", took.Round(time.Millisecond), raw)
	j, err := r.a.Store.Get(t.Context(), r.id)
	if err != nil || j.State != job.Succeeded || j.Attempts != 1 || len(j.Result) == 0 {
		t.Fatalf("the job after the worker: %+v %v", j, err)
	}
	if h, err := r.a.Store.Get(t.Context(), held.ID); err != nil || h.State != job.Running || h.LeaseOwner != "another-worker" {
		t.Fatalf("the held job after the worker: %+v %v", h, err)
	}
	dead := r.receiveAll(t, r.a.Config.DLQURL, 1)
	reason := dead[0].MessageAttributes[sqs.ReasonAttribute]
	if aws.ToString(dead[0].Body) != poison || aws.ToString(reason.StringValue) != "unparseable" {
		t.Fatalf("dead letter %q, reason %q; want %q, unparseable", aws.ToString(dead[0].Body), aws.ToString(reason.StringValue), poison)
	}
}

// streamValue is an item's attribute as a stream record carries it.
func streamValue(t *testing.T, v types.AttributeValue) events.DynamoDBAttributeValue {
	switch v := v.(type) {
	case *types.AttributeValueMemberS:
		return events.NewStringAttribute(v.Value)
	case *types.AttributeValueMemberN:
		return events.NewNumberAttribute(v.Value)
	case *types.AttributeValueMemberB:
		return events.NewBinaryAttribute(v.Value)
	case *types.AttributeValueMemberBOOL:
		return events.NewBooleanAttribute(v.Value)
	case *types.AttributeValueMemberNULL:
		return events.NewNullAttribute()
	case *types.AttributeValueMemberSS:
		return events.NewStringSetAttribute(v.Value)
	case *types.AttributeValueMemberNS:
		return events.NewNumberSetAttribute(v.Value)
	case *types.AttributeValueMemberL:
		var l []events.DynamoDBAttributeValue
		for _, e := range v.Value {
			l = append(l, streamValue(t, e))
		}
		return events.NewListAttribute(l)
	case *types.AttributeValueMemberM:
		return events.NewMapAttribute(streamImage(t, v.Value))
	}
	t.Fatalf("attribute %T in a job item", v)
	return events.DynamoDBAttributeValue{}
}

func streamImage(t *testing.T, item map[string]types.AttributeValue) map[string]events.DynamoDBAttributeValue {
	out := map[string]events.DynamoDBAttributeValue{}
	for k, v := range item {
		out[k] = streamValue(t, v)
	}
	return out
}

// streamRecord is the table stream's MODIFY record (NEW_AND_OLD_IMAGES)
// for a write that took the job's item from old to cur.
func (r *rieRun) streamRecord(t *testing.T, seq int, old, cur map[string]types.AttributeValue) events.DynamoDBEventRecord {
	now := time.Now()
	return events.DynamoDBEventRecord{
		EventID: fmt.Sprintf("rie-%d", seq), EventName: "MODIFY", EventVersion: "1.1", EventSource: "aws:dynamodb", AWSRegion: "us-east-1",
		EventSourceArn: "arn:aws:dynamodb:us-east-1:000000000000:table/" + r.a.Config.Table + "/stream/" + now.UTC().Format("2006-01-02T15:04:05.000"),
		Change: events.DynamoDBStreamRecord{
			ApproximateCreationDateTime: events.SecondsEpochTime{Time: now}, Keys: streamImage(t, map[string]types.AttributeValue{"id": cur["id"]}),
			NewImage: streamImage(t, cur), OldImage: streamImage(t, old), SequenceNumber: fmt.Sprintf("%021d", seq),
			SizeBytes: 1024, StreamViewType: "NEW_AND_OLD_IMAGES",
		},
	}
}

// notifier: a stream batch of the job's move to succeeded and of a write
// that left its state as it was (a delivery record's) sends one notice to
// the callback queue; that notice, as the callback queue's batch, is
// delivered to the receiver, signed with the tenant's key: derived from
// the secret the notifier read from Secrets Manager at init, at the key
// version the tenants table holds, the same key GET /webhook-key gave.
func (r *rieRun) notifier(t *testing.T) {
	out, err := r.ddb.GetItem(t.Context(), &awsddb.GetItemInput{TableName: aws.String(r.a.Config.Table),
		Key: map[string]types.AttributeValue{"id": &types.AttributeValueMemberS{Value: r.id}}, ConsistentRead: aws.Bool(true)})
	if err != nil || out.Item == nil {
		t.Fatalf("the job's item: %v", err)
	}
	running := map[string]types.AttributeValue{}
	for k, v := range out.Item {
		running[k] = v
	}
	running["state"] = &types.AttributeValueMemberS{Value: string(job.Running)}
	ev := events.DynamoDBEvent{Records: []events.DynamoDBEventRecord{r.streamRecord(t, 1, running, out.Item), r.streamRecord(t, 2, out.Item, out.Item)}}
	var raw json.RawMessage
	fn := r.fns["notifier"]
	took := fn.invoke(t, ev, &raw)
	var resp events.DynamoDBEventResponse
	if err := json.Unmarshal(raw, &resp); err != nil || len(resp.BatchItemFailures) != 0 {
		t.Fatalf("notifier stream answer %s (%v), want no batch item failure", raw, err)
	}
	notices := r.receiveAll(t, r.a.Config.CallbackQueueURL, 1)
	if !strings.Contains(aws.ToString(notices[0].Body), r.id) {
		t.Fatalf("notice %s, want one for %s", aws.ToString(notices[0].Body), r.id)
	}
	t.Logf("notifier stream batch of 2 in %s (the first invocation: init included); notice %s", took.Round(time.Millisecond), aws.ToString(notices[0].Body))
	qev := r.sqsEvent(t, r.a.Config.CallbackQueueURL, notices)
	var qresp events.SQSEventResponse
	took = fn.invoke(t, qev, &qresp)
	if len(qresp.BatchItemFailures) != 0 {
		t.Fatalf("notifier delivery: batch item failures %+v", qresp.BatchItemFailures)
	}
	r.settle(t, r.a.Config.CallbackQueueURL, qev, qresp)
	acked, kinds, forged, _, _ := r.rcv.snapshot()
	if len(acked[r.id]) != 1 || kinds[r.id] != "job.succeeded" || forged != 0 {
		t.Fatalf("receiver: acked %v, types %v, forged %d", acked, kinds, forged)
	}
	t.Logf("notifier delivery batch of 1 in %s", took.Round(time.Millisecond))
}

// reconciler: the schedule's event sweeps once; a job recorded 20 minutes
// ago whose message was never sent is re-sent, and the report says so.
func (r *rieRun) reconciler(t *testing.T) {
	lost := r.seedJob(t, "lost", 20*time.Minute)
	now := time.Now().UTC()
	ev := events.CloudWatchEvent{Version: "0", ID: fmt.Sprintf("rie-%d", now.UnixNano()), DetailType: "Scheduled Event", Source: "aws.events",
		AccountID: "000000000000", Time: now, Region: "us-east-1", Detail: json.RawMessage(`{}`),
		Resources: []string{"arn:aws:events:us-east-1:000000000000:rule/aijobs-reconcile"}}
	var rep reconciler.Report
	took := r.fns["reconciler"].invoke(t, ev, &rep)
	if rep.Candidates != 1 || rep.Queued != 1 || rep.Errors != 0 {
		t.Fatalf("reconciler report %+v, want the lost job alone re-sent", rep)
	}
	msgs := r.receiveAll(t, r.a.Config.QueueURL, 1)
	if !strings.Contains(aws.ToString(msgs[0].Body), lost.ID) {
		t.Fatalf("re-sent %s, want the lost job %s", aws.ToString(msgs[0].Body), lost.ID)
	}
	t.Logf("reconciler sweep in %s (init included): %+v", took.Round(time.Millisecond), rep)
}
