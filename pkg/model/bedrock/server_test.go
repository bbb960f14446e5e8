package bedrock_test

import (
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
	"github.com/aijobs/aijobs/pkg/model/modeltest"
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

// TestConformance holds the provider to the contract every provider keeps
// (pkg/model/modeltest), over Bedrock's wire format and the real SDK.
func TestConformance(t *testing.T) { modeltest.RunHTTP(t, wire()) }

// wire is the suite's adapter.
func wire() modeltest.Wire {
	return modeltest.Wire{
		New: func(url string, stream bool, hc modeltest.Doer) (model.Provider, error) {
			cfg := awsConfig()
			cfg.HTTPClient = hc
			return bedrock.New(bedrock.Config{AWS: cfg, Endpoint: url, Model: modelID, Stream: stream})
		},
		Secret: secretKey, Model: modelID, Stop: "end_turn", StreamType: "application/vnd.amazon.eventstream",
		Answer: func(w http.ResponseWriter, text string, u *model.Usage) {
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, converse(text, "end_turn", u))
		},
		StreamStart: func(w http.ResponseWriter, _ int64) {
			s := events(w)
			s.messageStart()
			s.event("contentBlockStart", `{"contentBlockIndex":0,"start":{"type":"text"}}`) // not sent for text; tolerated
		},
		Delta: func(w http.ResponseWriter, text string) { events(w).delta(text) },
		Counts: func(w http.ResponseWriter, u model.Usage) {
			events(w).metadata(int(u.InputTokens), int(u.OutputTokens))
		},
		StreamEnd: func(w http.ResponseWriter, u *model.Usage) {
			s := events(w)
			s.stop("end_turn")
			if u != nil {
				s.metadata(int(u.InputTokens), int(u.OutputTokens))
			}
		},
		StreamError: func(w http.ResponseWriter, message string) {
			events(w).exception("modelStreamErrorException",
				fmt.Sprintf(`{"message":%q,"originalStatusCode":500,"originalMessage":%q}`, message, prompt))
		},
		Refuse: func(w http.ResponseWriter, message string) {
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("X-Amzn-Errortype", "ValidationException:http://internal.amazon.com/coral/com.amazon.bedrock/")
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprintf(w, `{"message":%q}`, message)
		},
	}
}

func awsConfig() aws.Config {
	return aws.Config{
		Region:      "us-east-1",
		Credentials: credentials.NewStaticCredentialsProvider(accessKey, secretKey, ""),
	}
}

func newClient(t testing.TB, endpoint string, stream bool) model.Provider {
	t.Helper()
	return wire().Client(t, endpoint, stream, nil)
}

func request() model.Request {
	return model.Request{JobID: "job-1", Messages: []job.Message{{Role: "user", Content: prompt}}}
}

// asModelError fails the test unless err is a classified, secret-free
// *model.Error (modeltest.Classified).
func asModelError(t *testing.T, err error, secrets ...string) *model.Error {
	t.Helper()
	return modeltest.Classified(t, err, append(secrets, secretKey)...)
}

// converseJSON is a Converse answer as Bedrock sends it.
func converseJSON(text, stopReason string, in, out int) string {
	return converse(text, stopReason, &model.Usage{InputTokens: int64(in), OutputTokens: int64(out)})
}

// converse is a Converse answer; u is its usage (nil: none).
func converse(text, stopReason string, u *model.Usage) string {
	usage := ""
	if u != nil {
		usage = fmt.Sprintf(`,"usage":{"inputTokens":%d,"outputTokens":%d,"totalTokens":%d}`, u.InputTokens, u.OutputTokens, u.InputTokens+u.OutputTokens)
	}
	return fmt.Sprintf(`{"metrics":{"latencyMs":412},"output":{"message":{"content":[{"text":%q}],"role":"assistant"}},`+
		`"stopReason":%q%s}`, text, stopReason, usage)
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
	return events(w)
}

// events writes frames to a ConverseStream answer whose headers are sent.
func events(w http.ResponseWriter) *eventStream {
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
