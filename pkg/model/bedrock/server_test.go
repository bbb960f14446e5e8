package bedrock_test

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/protocol/eventstream"
	"github.com/aws/aws-sdk-go-v2/credentials"

	"github.com/aijobs/aijobs/pkg/job"
	"github.com/aijobs/aijobs/pkg/model"
	"github.com/aijobs/aijobs/pkg/model/bedrock"
)

// This file is the fake Bedrock Runtime: what the tests' httptest servers
// answer, in Bedrock's wire format, so the real SDK client serialises,
// signs and deserialises as it would against AWS.

const (
	accessKey = "AKIDTESTACCESSKEY"
	secretKey = "SECRET-secret-access-key"
	// prompt is what must never leak into an error.
	prompt = "SECRET-PROMPT tell me a story"
	// modelID is the config model; its ":" is escaped in the path.
	modelID = "anthropic.claude-3-haiku-20240307-v1:0"
)

// promptCeiling is job.PromptCeiling of the test prompt, what a call is
// billed for the prompt Bedrock never counted: (29+1)/2 + 8.
const promptCeiling = 23

// maxTokens is what the tests that lose an answer ask for (capped): a
// non-streamed call that was sent is billed all of it.
const maxTokens = 300

// worstCase is the bill of a non-streamed call sent whose answer was lost.
var worstCase = model.Usage{InputTokens: promptCeiling, OutputTokens: maxTokens, Estimated: true}

func awsConfig() aws.Config {
	return aws.Config{
		Region:      "us-east-1",
		Credentials: credentials.NewStaticCredentialsProvider(accessKey, secretKey, ""),
	}
}

func newClient(t testing.TB, endpoint string, stream bool) *bedrock.Client {
	t.Helper()
	c, err := bedrock.New(bedrock.Config{AWS: awsConfig(), Endpoint: endpoint, Model: modelID, Stream: stream})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return c
}

func request() model.Request {
	return model.Request{JobID: "job-1", Messages: []job.Message{{Role: "user", Content: prompt}}}
}

// capped is request() with max_tokens set, as the worker always sets it.
func capped() model.Request {
	r := request()
	r.MaxTokens = maxTokens
	return r
}

// asModelError fails the test unless err is a *model.Error free of secrets.
func asModelError(t *testing.T, err error, secrets ...string) *model.Error {
	t.Helper()
	var me *model.Error
	if !errors.As(err, &me) {
		t.Fatalf("error %v (%T) is not a *model.Error", err, err)
	}
	for _, s := range append([]string{secretKey, prompt, "SECRET"}, secrets...) {
		if strings.Contains(me.Detail, s) || strings.Contains(err.Error(), s) {
			t.Fatalf("error leaks %q: detail %q, error %q", s, me.Detail, err.Error())
		}
	}
	if len(me.Detail) > 100 {
		t.Fatalf("detail %q is longer than 100 bytes", me.Detail)
	}
	if class, usage := model.Classify(err); class != me.Class || usage != me.Usage {
		t.Fatalf("Classify = %q %+v, want %q %+v", class, usage, me.Class, me.Usage)
	}
	return me
}

// converseJSON is a Converse answer as Bedrock sends it.
func converseJSON(text, stopReason string, in, out int) string {
	return fmt.Sprintf(`{"metrics":{"latencyMs":412},"output":{"message":{"content":[{"text":%q}],"role":"assistant"}},`+
		`"stopReason":%q,"usage":{"inputTokens":%d,"outputTokens":%d,"totalTokens":%d}}`, text, stopReason, in, out, in+out)
}

// eventStream writes ConverseStream's answer: binary event stream frames
// (application/vnd.amazon.eventstream), each flushed as it is written.
type eventStream struct {
	w   http.ResponseWriter
	enc *eventstream.Encoder
}

// startStream sends the headers of a ConverseStream answer.
func startStream(w http.ResponseWriter) *eventStream {
	w.Header().Set("Content-Type", "application/vnd.amazon.eventstream")
	w.Header().Set("x-amzn-RequestId", "0e2f4b8c-1d3a-4e5f-8a7b-9c0d1e2f3a4b")
	w.WriteHeader(http.StatusOK)
	return &eventStream{w: w, enc: eventstream.NewEncoder()}
}

// frame is one message with Bedrock's headers: an event names its type in
// :event-type, an exception in :exception-type.
func frame(messageType, typ, payload string) eventstream.Message {
	var m eventstream.Message
	if messageType == "exception" {
		m.Headers.Set(":exception-type", eventstream.StringValue(typ))
	} else {
		m.Headers.Set(":event-type", eventstream.StringValue(typ))
	}
	m.Headers.Set(":content-type", eventstream.StringValue("application/json"))
	m.Headers.Set(":message-type", eventstream.StringValue(messageType))
	m.Payload = []byte(payload)
	return m
}

func (s *eventStream) write(m eventstream.Message) {
	if err := s.enc.Encode(s.w, m); err != nil {
		panic(http.ErrAbortHandler)
	}
	s.w.(http.Flusher).Flush()
}

// event sends one event; Bedrock pads every payload with a "p" field (to
// hide the length of the text), which clients must ignore.
func (s *eventStream) event(typ, payload string) {
	payload = strings.Replace(payload, "{", `{"p":"abcdefghijklmnopqrstuvwxyzABCDEFGH",`, 1)
	s.write(frame("event", typ, payload))
}

// exception sends an in-stream exception; typ is the union member name,
// e.g. throttlingException.
func (s *eventStream) exception(typ, payload string) {
	s.write(frame("exception", typ, payload))
}

func (s *eventStream) messageStart() { s.event("messageStart", `{"role":"assistant"}`) }

func (s *eventStream) delta(text string) {
	s.event("contentBlockDelta", fmt.Sprintf(`{"contentBlockIndex":0,"delta":{"text":%q}}`, text))
}

func (s *eventStream) stop(reason string) {
	s.event("contentBlockStop", `{"contentBlockIndex":0}`)
	s.event("messageStop", fmt.Sprintf(`{"stopReason":%q}`, reason))
}

func (s *eventStream) metadata(in, out int) {
	s.event("metadata", fmt.Sprintf(`{"metrics":{"latencyMs":318},"usage":{"inputTokens":%d,"outputTokens":%d,"totalTokens":%d}}`,
		in, out, in+out))
}

// answer streams a whole answer, one delta per piece.
func (s *eventStream) answer(reason string, in, out int, pieces ...string) {
	s.messageStart()
	for _, p := range pieces {
		s.delta(p)
	}
	s.stop(reason)
	s.metadata(in, out)
}
