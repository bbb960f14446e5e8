package openai_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aijobs/aijobs/pkg/job"
	"github.com/aijobs/aijobs/pkg/model"
	"github.com/aijobs/aijobs/pkg/model/modeltest"
	"github.com/aijobs/aijobs/pkg/model/openai"
)

// Background mode: the Responses API's create, polls and cancel, as
// OpenAI answers them (developers.openai.com, "Background mode").

const (
	respID   = "resp_67ccd2bed1ec8190b14f964abc0542670bb6a6b452d3795b"
	respPath = "/responses/" + respID
	// pollEvery keeps the tests fast: a poll is a tick of it.
	pollEvery = 5 * time.Millisecond
)

var answered = model.Usage{InputTokens: 36, OutputTokens: 87}

// object is a response object of status; rest is more of its fields,
// each with its leading comma.
func object(status, rest string) string {
	return fmt.Sprintf(`{"id":%q,"object":"response","created_at":1741476542,"status":%q,"background":true,`+
		`"error":null,"incomplete_details":null,"model":%q,"output":[],"store":true%s}`, respID, status, answerModel, rest)
}

// output is an output field: a reasoning item, then one message per text,
// each in two output_text parts.
func output(texts ...string) string {
	items := []string{`{"id":"rs_1","type":"reasoning","summary":[{"type":"summary_text","text":"not the answer"}]}`}
	for i, s := range texts {
		half := len(s) / 2
		items = append(items, fmt.Sprintf(`{"id":"msg_%d","type":"message","status":"completed","role":"assistant","content":[`+
			`{"type":"output_text","annotations":[],"text":%q},{"type":"output_text","annotations":[],"text":%q}]}`, i, s[:half], s[half:]))
	}
	return `,"output":[` + strings.Join(items, ",") + `]`
}

func responsesUsage(u model.Usage) string {
	return fmt.Sprintf(`,"usage":{"input_tokens":%d,"input_tokens_details":{"cached_tokens":0},"output_tokens":%d,`+
		`"output_tokens_details":{"reasoning_tokens":0},"total_tokens":%d}`, u.InputTokens, u.OutputTokens, u.InputTokens+u.OutputTokens)
}

func completed(u model.Usage, texts ...string) string {
	return object("completed", output(texts...)+responsesUsage(u))
}

func incomplete(reason string, u model.Usage, texts ...string) string {
	return object("incomplete", output(texts...)+responsesUsage(u)+fmt.Sprintf(`,"incomplete_details":{"reason":%q}`, reason))
}

func failed(code string, u *model.Usage) string {
	rest := fmt.Sprintf(`,"error":{"code":%q,"message":"could not answer %s"}`, code, modeltest.Prompt)
	if u != nil {
		rest += responsesUsage(*u)
	}
	return object("failed", rest)
}

// answer is one of the fake server's answers: a status, a body and
// header name, value pairs, or (status 0) a connection cut before any
// answer.
type answer struct {
	status int
	body   string
	header []string
}

func ok(body string) answer { return answer{http.StatusOK, body, nil} }

// responses is a fake Responses API. The create answers create; the
// n-th poll answers polls[n] (the last one repeats). It logs every
// request, and the call's Started, in the order they came.
type responses struct {
	t      *testing.T
	srv    *httptest.Server
	create answer
	polls  []answer
	mu     sync.Mutex
	log    []string
	// auth is each request's Authorization.
	auth    []string
	created map[string]any
	polled  int
	// onPoll, when set, runs as the n-th poll (from 0) arrives.
	onPoll func(n int)
}

func serveResponses(t *testing.T, create answer, polls ...answer) *responses {
	f := &responses{t: t, create: create, polls: polls}
	f.srv = httptest.NewServer(http.HandlerFunc(f.handle))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *responses) handle(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	f.log = append(f.log, r.Method+" "+r.URL.EscapedPath())
	f.auth = append(f.auth, r.Header.Get("Authorization"))
	var a answer
	n := -1
	switch {
	case r.Method == http.MethodPost && r.URL.Path == "/responses":
		if err := json.NewDecoder(r.Body).Decode(&f.created); err != nil {
			f.t.Errorf("create body: %v", err)
		}
		a = f.create
	case r.Method == http.MethodGet:
		n = f.polled
		a = f.polls[min(n, len(f.polls)-1)]
		f.polled++
	case r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/cancel"):
		a = ok(object("cancelled", ""))
	default:
		a = answer{http.StatusMethodNotAllowed, "", nil}
	}
	onPoll := f.onPoll
	f.mu.Unlock()
	if n >= 0 && onPoll != nil {
		onPoll(n)
	}
	if a.status == 0 {
		conn, _, err := w.(http.Hijacker).Hijack()
		if err == nil {
			conn.Close()
		}
		return
	}
	w.Header().Set("Content-Type", "application/json")
	for i := 0; i+1 < len(a.header); i += 2 {
		w.Header().Set(a.header[i], a.header[i+1])
	}
	w.WriteHeader(a.status)
	fmt.Fprint(w, a.body)
}

// note logs what the call did, among the server's requests.
func (f *responses) note(s string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.log = append(f.log, s)
}

// polling sets what runs as each poll arrives.
func (f *responses) polling(fn func(n int)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.onPoll = fn
}

// body is the create's JSON body.
func (f *responses) body() map[string]any {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.created
}

func (f *responses) requests() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.log...)
}

// client is a background client of f that logs Started into f.
func (f *responses) client(t *testing.T) (model.Provider, model.Request) {
	c, err := openai.New(openai.Config{BaseURL: f.srv.URL + "/", APIKey: apiKey, Model: "cfg-model",
		Background: true, PollEvery: pollEvery, Stream: true})
	if err != nil {
		t.Fatal(err)
	}
	r := modeltest.Request()
	r.Started = func(id string) { f.note("started " + id) }
	return c, r
}

// authorized fails t unless every request carried the key.
func (f *responses) authorized(t *testing.T) {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	for i, a := range f.auth {
		if a != "Bearer "+apiKey {
			t.Fatalf("request %d (%s) has Authorization %q", i, f.log[i], a)
		}
	}
}

func TestBackgroundCompleted(t *testing.T) {
	f := serveResponses(t, ok(object("queued", "")),
		ok(object("in_progress", "")), ok(object("in_progress", "")), ok(completed(answered, "Once upon", " a time")))
	c, r := f.client(t)
	var progress []int
	r.Progress = func(n int) { progress = append(progress, n) }
	got, err := c.Generate(context.Background(), r)
	if err != nil {
		t.Fatalf("Generate: %v", err)
	}
	want := model.Response{Output: "Once upon a time", Model: answerModel, FinishReason: "stop", Usage: answered}
	if got != want {
		t.Fatalf("got %+v, want %+v", got, want)
	}
	wantLog := []string{"POST /responses", "started " + respID, "GET " + respPath, "GET " + respPath, "GET " + respPath}
	if log := f.requests(); !reflect.DeepEqual(log, wantLog) {
		t.Fatalf("requests %q, want %q", log, wantLog)
	}
	if !reflect.DeepEqual(progress, []int{87}) {
		t.Fatalf("progress %v, want [87]", progress)
	}
	wantBody := map[string]any{"model": "cfg-model", "max_output_tokens": float64(modeltest.MaxTokens),
		"background": true, "store": true, "input": []any{map[string]any{"role": "user", "content": modeltest.Prompt}}}
	if got := f.body(); !reflect.DeepEqual(got, wantBody) {
		t.Fatalf("create body %v, want %v", got, wantBody)
	}
	f.authorized(t)
}

func TestBackgroundResume(t *testing.T) {
	t.Run("completed", func(t *testing.T) {
		f := serveResponses(t, answer{},
			ok(object("in_progress", "")), ok(completed(answered, "Once")))
		c, r := f.client(t)
		r.Resume = respID
		got, err := c.Generate(context.Background(), r)
		if err != nil {
			t.Fatalf("Generate: %v", err)
		}
		if got.Output != "Once" || got.Usage != answered || got.FinishReason != "stop" {
			t.Fatalf("got %+v", got)
		}
		if log, want := f.requests(), []string{"GET " + respPath, "GET " + respPath}; !reflect.DeepEqual(log, want) {
			t.Fatalf("requests %q, want %q", log, want)
		}
		f.authorized(t)
	})
	t.Run("the id is escaped", func(t *testing.T) {
		f := serveResponses(t, answer{}, ok(completed(answered, "Once")))
		c, r := f.client(t)
		r.Resume = "resp_1/../x?y"
		if _, err := c.Generate(context.Background(), r); err != nil {
			t.Fatalf("Generate: %v", err)
		}
		if log, want := f.requests(), []string{"GET /responses/resp_1%2F..%2Fx%3Fy"}; !reflect.DeepEqual(log, want) {
			t.Fatalf("requests %q, want %q", log, want)
		}
	})
	for _, at := range []int{0, 2} {
		t.Run(fmt.Sprintf("404 after %d polls is gone", at), func(t *testing.T) {
			polls := []answer{ok(object("queued", "")), ok(object("in_progress", ""))}[:at]
			gone := answer{http.StatusNotFound, errorJSON("Response not found", "invalid_request_error"), nil}
			f := serveResponses(t, answer{}, append(polls, gone)...)
			c, r := f.client(t)
			r.Resume = respID
			_, err := c.Generate(context.Background(), r)
			if !errors.Is(err, model.ErrGone) {
				t.Fatalf("err = %v, want ErrGone", err)
			}
			if me := modeltest.Classified(t, err, apiKey); me.Usage != (model.Usage{}) {
				t.Fatalf("usage %+v, want none", me.Usage)
			}
			for _, req := range f.requests() {
				if !strings.HasPrefix(req, "GET ") {
					t.Fatalf("resume sent %q", req)
				}
			}
		})
	}
}

// The final statuses, for a call that made its generation and for one
// that resumed it: both report what the response says it cost.
func TestBackgroundFinal(t *testing.T) {
	spent := model.Usage{InputTokens: 36, OutputTokens: 12}
	tests := []struct {
		name   string
		body   string
		class  job.ErrorClass // "" for an answer
		reason string         // the answer's
		usage  model.Usage    // the call made it; a resume's is the same unless resumed is set
		// resumed is a resume's usage when it differs.
		resumed *model.Usage
	}{
		{name: "token cap", body: incomplete("max_output_tokens", answered, "Once"), reason: "length", usage: answered},
		{name: "filtered", body: incomplete("content_filter", spent, "Once"), class: job.ContentFiltered, usage: spent},
		{name: "incomplete otherwise", body: incomplete("other", spent), class: job.ProviderError, usage: spent},
		{name: "rate limited", body: failed("rate_limit_exceeded", &spent), class: job.RateLimited, usage: spent},
		{name: "server error", body: failed("server_error", nil), class: job.ProviderError},
		{name: "invalid prompt", body: failed("invalid_prompt", nil), class: job.InvalidRequest},
		{name: "image policy", body: failed("image_content_policy_violation", nil), class: job.ContentFiltered},
		{name: "unknown code", body: failed("vector_store_timeout", nil), class: job.ProviderError},
		{name: "cancelled with usage", body: object("cancelled", responsesUsage(spent)), class: job.Cancelled, usage: spent},
		{name: "cancelled", body: object("cancelled", ""), class: job.Cancelled, usage: worstCase, resumed: &model.Usage{}},
		{name: "without counts", body: object("completed", output("Once")), reason: "stop",
			usage: model.Usage{InputTokens: modeltest.PromptCeiling, OutputTokens: 2, Estimated: true}},
	}
	for _, tt := range tests {
		for _, resume := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s resumed %v", tt.name, resume), func(t *testing.T) {
				f := serveResponses(t, ok(object("queued", "")), ok(object("in_progress", "")), ok(tt.body))
				c, r := f.client(t)
				want := tt.usage
				if resume {
					r.Resume = respID
					if tt.resumed != nil {
						want = *tt.resumed
					}
				}
				got, err := c.Generate(context.Background(), r)
				if tt.class == "" {
					if err != nil || got.FinishReason != tt.reason || got.Usage != want {
						t.Fatalf("got %+v, %v; want reason %q usage %+v", got, err, tt.reason, want)
					}
					return
				}
				me := modeltest.Classified(t, err, apiKey)
				if me.Class != tt.class || me.Usage != want {
					t.Fatalf("got %q %+v, want %q %+v", me.Class, me.Usage, tt.class, want)
				}
			})
		}
	}
}

// A call whose context ends while it polls stops the generation it made,
// and is billed the worst case; a resume leaves it running for a later
// attempt, and is billed nothing.
func TestBackgroundStop(t *testing.T) {
	for _, tt := range []struct {
		name     string
		resume   bool
		deadline bool
		class    job.ErrorClass
		usage    model.Usage
		log      []string
	}{
		{name: "cancelled", class: job.Cancelled, usage: worstCase,
			log: []string{"POST /responses", "started " + respID, "GET " + respPath, "POST " + respPath + "/cancel"}},
		{name: "deadline", deadline: true, class: job.Timeout, usage: worstCase,
			log: []string{"POST /responses", "started " + respID, "GET " + respPath, "POST " + respPath + "/cancel"}},
		{name: "resumed", resume: true, class: job.Cancelled, log: []string{"GET " + respPath}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := serveResponses(t, ok(object("queued", "")), ok(object("in_progress", "")))
			c, r := f.client(t)
			if tt.resume {
				r.Resume = respID
			}
			ctx, cancel := context.WithCancelCause(context.Background())
			defer cancel(nil)
			cause := context.Canceled
			if tt.deadline {
				// A deadline that passes as the first poll arrives,
				// without a clock to race.
				ctx, cause = deadlineCtx{ctx}, context.DeadlineExceeded
			}
			f.polling(func(int) { cancel(cause) })
			_, err := c.Generate(ctx, r)
			me := modeltest.Classified(t, err, apiKey)
			if me.Class != tt.class || me.Usage != tt.usage {
				t.Fatalf("got %q %+v, want %q %+v", me.Class, me.Usage, tt.class, tt.usage)
			}
			if log := f.requests(); !reflect.DeepEqual(log, tt.log) {
				t.Fatalf("requests %q, want %q", log, tt.log)
			}
			f.authorized(t)
		})
	}
}

// deadlineCtx reports its cause as its error, as a context whose
// deadline passed does.
type deadlineCtx struct{ context.Context }

func (c deadlineCtx) Err() error {
	if c.Context.Err() == nil {
		return nil
	}
	return context.Cause(c.Context)
}

// Polls are free reads: a failed one is tried again at the next tick, up
// to five in a row.
func TestBackgroundPollFailures(t *testing.T) {
	boom := answer{http.StatusInternalServerError, errorJSON("boom", "server_error"), nil}
	busy := answer{http.StatusTooManyRequests, errorJSON("slow down", "requests"), nil}
	cut := answer{}
	junk := ok("{not json")
	done := ok(completed(answered, "Once"))
	tests := []struct {
		name   string
		resume bool
		polls  []answer
		class  job.ErrorClass // "" for an answer
		usage  model.Usage
		cancel bool // the call cancels what it made
	}{
		{name: "failures short of five, then the answer", polls: []answer{boom, cut, ok(object("in_progress", "")), junk, busy, boom, boom, done},
			usage: answered},
		{name: "five 500s", polls: []answer{boom}, class: job.ProviderError, usage: worstCase, cancel: true},
		{name: "five cuts", polls: []answer{cut}, class: job.Network, usage: worstCase, cancel: true},
		{name: "five 429s", polls: []answer{busy, busy, busy, busy, busy, done}, class: job.RateLimited, usage: worstCase, cancel: true},
		{name: "five unparseable", polls: []answer{junk}, class: job.ProviderError, usage: worstCase, cancel: true},
		{name: "401 at once", polls: []answer{{http.StatusUnauthorized, errorJSON("bad key", "invalid_request_error"), nil}, done},
			class: job.Auth, usage: worstCase, cancel: true},
		{name: "vanished", polls: []answer{ok(object("in_progress", "")), {http.StatusNotFound, "", nil}}, class: job.ProviderError, usage: worstCase},
		{name: "unknown status", polls: []answer{ok(object("thinking", ""))}, class: job.ProviderError, usage: worstCase, cancel: true},
		{name: "resumed, five 500s", resume: true, polls: []answer{boom}, class: job.ProviderError},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := serveResponses(t, ok(object("queued", "")), tt.polls...)
			c, r := f.client(t)
			if tt.resume {
				r.Resume = respID
			}
			got, err := c.Generate(context.Background(), r)
			if tt.class == "" {
				if err != nil || got.Usage != tt.usage {
					t.Fatalf("got %+v, %v; want usage %+v", got, err, tt.usage)
				}
				return
			}
			me := modeltest.Classified(t, err, apiKey)
			if me.Class != tt.class || me.Usage != tt.usage {
				t.Fatalf("got %q %+v, want %q %+v", me.Class, me.Usage, tt.class, tt.usage)
			}
			log := f.requests()
			if cancelled := log[len(log)-1] == "POST "+respPath+"/cancel"; cancelled != tt.cancel {
				t.Fatalf("requests %q: cancelled %v, want %v", log, cancelled, tt.cancel)
			}
		})
	}
}

// The create is a billed generation: sent once, never again, and billed
// the worst case once it may have reached the server.
func TestBackgroundCreate(t *testing.T) {
	tests := []struct {
		name   string
		create answer
		class  job.ErrorClass
		usage  model.Usage
		pause  bool
	}{
		{name: "429", create: answer{http.StatusTooManyRequests, errorJSON("Rate limit reached", "requests"), []string{"retry-after", "7"}},
			class: job.RateLimited, pause: true},
		{name: "400", create: answer{http.StatusBadRequest, errorJSON("bad "+modeltest.Prompt, "invalid_request_error"), nil},
			class: job.InvalidRequest},
		{name: "answer lost", create: answer{}, class: job.Network, usage: worstCase},
		{name: "unparseable", create: ok("{not json"), class: job.ProviderError, usage: worstCase},
		{name: "no id", create: ok(`{"object":"response","status":"queued"}`), class: job.ProviderError, usage: worstCase},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := serveResponses(t, tt.create, ok(completed(answered, "Once")))
			c, r := f.client(t)
			_, err := c.Generate(context.Background(), r)
			me := modeltest.Classified(t, err, apiKey)
			if me.Class != tt.class || me.Usage != tt.usage || (me.Pause > 0) != tt.pause {
				t.Fatalf("got %q %+v pause %v, want %q %+v pause %v", me.Class, me.Usage, me.Pause, tt.class, tt.usage, tt.pause)
			}
			if log := f.requests(); !reflect.DeepEqual(log, []string{"POST /responses"}) {
				t.Fatalf("requests %q, want the create alone", log)
			}
		})
	}
}

// A compatible server that answers the create in full needs no poll.
func TestBackgroundAnsweredAtOnce(t *testing.T) {
	f := serveResponses(t, ok(completed(answered, "Once")))
	c, r := f.client(t)
	got, err := c.Generate(context.Background(), r)
	if err != nil || got.Output != "Once" || got.Usage != answered {
		t.Fatalf("got %+v, %v", got, err)
	}
	if log, want := f.requests(), []string{"POST /responses", "started " + respID}; !reflect.DeepEqual(log, want) {
		t.Fatalf("requests %q, want %q", log, want)
	}
}

func TestResumes(t *testing.T) {
	for _, bg := range []bool{false, true} {
		c, err := openai.New(openai.Config{BaseURL: "http://localhost", Background: bg})
		if err != nil {
			t.Fatal(err)
		}
		if c.Resumes() != bg {
			t.Fatalf("Resumes() = %v with Background %v", c.Resumes(), bg)
		}
	}
}
