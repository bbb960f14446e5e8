package modeltest

import (
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aijobs/aijobs/pkg/model"
)

// Wire is an HTTP provider's adapter: how to build the provider against a
// test server, and how that server writes the provider's answers in the
// provider's own wire format. Every writer flushes what it wrote.
type Wire struct {
	// New builds the provider against the server at url, streaming or
	// not; hc, when not nil, is the HTTP client it must send through, else
	// it uses its default.
	New func(url string, stream bool, hc Doer) (model.Provider, error)
	// Secret is the credential New gives the provider: no error may show it.
	Secret string
	// Model and Stop are the model name and the stop reason the answers
	// below carry, as the provider reports them in a Response.
	Model, Stop string
	// StreamType is the Content-Type of a streamed answer.
	StreamType string
	// StartsWithInput says the stream's start reports the prompt count
	// (Anthropic's message_start): a stream cut short is then billed that
	// count instead of the prompt ceiling.
	StartsWithInput bool

	// Answer writes the body of a whole answer of text, not streamed,
	// sent as application/json; u is the usage it reports (nil: none).
	Answer func(w http.ResponseWriter, text string, u *model.Usage)
	// StreamStart writes what a stream sends before its first delta (its
	// status and Content-Type are written already); input is the prompt
	// count, for a stream whose start reports it.
	StreamStart func(w http.ResponseWriter, input int64)
	// Delta writes one piece of the answer's text.
	Delta func(w http.ResponseWriter, text string)
	// Counts writes the stream's final usage alone, without what ends
	// the stream.
	Counts func(w http.ResponseWriter, u model.Usage)
	// StreamEnd writes the end of a stream after its deltas: its stop
	// reason, its final usage u (nil: none) and its last event.
	StreamEnd func(w http.ResponseWriter, u *model.Usage)
	// StreamError writes an in-stream error whose message is message.
	StreamError func(w http.ResponseWriter, message string)
	// Refuse writes an error answer (a 400 in the provider's own shape)
	// whose message is message.
	Refuse func(w http.ResponseWriter, message string)
}

// Client is the provider New builds, or the end of t.
func (wi Wire) Client(t testing.TB, url string, stream bool, hc Doer) model.Provider {
	t.Helper()
	p, err := wi.New(url, stream, hc)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return p
}

// Doer is an HTTP client as the providers take one (openai.Doer,
// anthropic.Doer, aws.HTTPClient); *http.Client is one.
type Doer interface {
	Do(*http.Request) (*http.Response, error)
}

// The answer every case's server gives, when it answers in full.
var (
	pieces   = []string{"Once", " upon", " a time."}
	fullText = "Once upon a time."
	full     = model.Usage{InputTokens: 12, OutputTokens: 7}
)

// PromptCeiling is job.PromptCeiling of Prompt, what a call is billed for
// the prompt when the provider never counted it: (29+1)/2 + 8.
const PromptCeiling = 23

// The bills of a call sent and never answered (docs/errors.md): a whole
// answer's worst case, the prompt alone for a stream.
var (
	worstCase  = model.Usage{InputTokens: PromptCeiling, OutputTokens: MaxTokens, Estimated: true}
	promptOnly = model.Usage{InputTokens: PromptCeiling, Estimated: true}
)

// seen is the bill of a stream cut after deltas deltas: the prompt count
// its start reported, else the ceiling, and a token a delta, estimated.
func (wi Wire) seen(deltas int64) model.Usage {
	u := model.Usage{InputTokens: PromptCeiling, OutputTokens: deltas, Estimated: true}
	if wi.StartsWithInput {
		u.InputTokens = full.InputTokens
	}
	return u
}

// lost is the bill of a call sent whose answer never came.
func lost(stream bool) model.Usage {
	if stream {
		return promptOnly
	}
	return worstCase
}

// server is a test server that counts its requests and reads each in full
// before handle answers, so it notices the client hanging up as a real
// server would.
type server struct {
	*httptest.Server
	requests atomic.Int32
}

func serve(t *testing.T, handle func(w http.ResponseWriter, r *http.Request)) *server {
	s := &server{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.requests.Add(1)
		_, _ = io.Copy(io.Discard, r.Body)
		handle(w, r)
	}))
	t.Cleanup(s.Close)
	return s
}

// call is the arranged call of provider p against s.
func (s *server) call(p model.Provider, c Call) Call {
	c.Provider, c.Request = p, Request()
	c.Reached = func() int { return int(s.requests.Load()) }
	return c
}

// startStream writes a stream's status and headers and flushes them.
func (wi Wire) startStream(w http.ResponseWriter) {
	w.Header().Set("Content-Type", wi.StreamType)
	w.WriteHeader(http.StatusOK)
	w.(http.Flusher).Flush()
}

// answer writes a whole answer of pieces reporting u, streamed or not.
func (wi Wire) answer(w http.ResponseWriter, stream bool, u *model.Usage) {
	if !stream {
		w.Header().Set("Content-Type", "application/json")
		wi.Answer(w, fullText, u)
		return
	}
	wi.startStream(w)
	wi.StreamStart(w, full.InputTokens)
	for _, p := range pieces {
		wi.Delta(w, p)
	}
	wi.StreamEnd(w, u)
}

// stall waits until the client goes away, or ten seconds.
func stall(r *http.Request) {
	select {
	case <-r.Context().Done():
	case <-time.After(10 * time.Second):
	}
}

// provider is wi as Run drives it.
func (wi Wire) provider() Provider {
	return Provider{
		Streams: true,
		Secret:  wi.Secret,
		Answering: func(t *testing.T, stream bool) Call {
			s := serve(t, func(w http.ResponseWriter, _ *http.Request) { wi.answer(w, stream, &full) })
			return s.call(wi.Client(t, s.URL, stream, nil), Call{
				Want: model.Response{Output: fullText, Model: wi.Model, FinishReason: wi.Stop, Usage: full}})
		},
		Stalling: func(t *testing.T, stream bool) Call {
			s := serve(t, func(w http.ResponseWriter, r *http.Request) {
				if stream {
					wi.startStream(w)
					wi.StreamStart(w, full.InputTokens)
					wi.Delta(w, pieces[0])
				}
				stall(r)
			})
			bill := lost(stream)
			if stream {
				bill = wi.seen(1)
			}
			return s.call(wi.Client(t, s.URL, stream, nil), Call{Billed: &bill})
		},
		Refusing: func(t *testing.T, stream bool, message string) Call {
			s := serve(t, func(w http.ResponseWriter, _ *http.Request) { wi.Refuse(w, message) })
			return s.call(wi.Client(t, s.URL, stream, nil), Call{Billed: &model.Usage{}}) // an error answer is not billed
		},
	}
}
