package chaos

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"
)

// The model fault kinds, per request the model server accepts.
const (
	// ModelStallHeaders sends nothing for seconds (a queue at the
	// provider), sometimes past the rung's timeout.
	ModelStallHeaders = "model_stall_headers"
	// ModelCut drops the connection: before the headers, or mid-stream
	// after some tokens (mid-body for a non-streaming answer).
	ModelCut = "model_cut"
	// ModelTrickle streams tokens slowly, often past the rung's timeout.
	ModelTrickle = "model_trickle"
	// ModelRateLimited answers 429 with retry-after; nothing is billed.
	ModelRateLimited = "model_429"
	// ModelOverloaded answers 529 or 503 overloaded; nothing is billed.
	ModelOverloaded = "model_overloaded"
	// ModelLate generates past the client's timeout: a non-streaming
	// generation is finished and billed whole after the client gave up; a
	// stream is only slow (a provider stops a stream whose client left).
	ModelLate = "model_late"
)

// ModelFault is what the model server does with one request.
type ModelFault struct {
	Kind string
	// Delay is the stall before the headers.
	Delay time.Duration
	// CutAfter is the tokens sent before a cut; -1 cuts before the headers.
	CutAfter int
	// RetryAfter is the 429's retry-after, in seconds.
	RetryAfter int
	// Status is the overloaded answer's status (529 or 503).
	Status int
	// Total is how long a late generation takes, whatever its tokens.
	Total time.Duration
}

// GenPlan is one generation's shape: its tokens and pacing, and its fault.
type GenPlan struct {
	Tokens   int
	Prefill  time.Duration
	PerToken time.Duration
	Fault    ModelFault
}

// Generation is one request the model server accepted, as the provider's
// invoice and logs would show it.
type Generation struct {
	NS     string
	Index  int
	Seq    int // the request's rank among this job's requests
	Who    string
	Stream bool
	Model  string
	Fault  string
	Start  time.Time
	End    time.Time
	// Prompt and Output are the billed tokens.
	Prompt, Output int64
	// Outcome is written, client_gone, cut@<tokens>, rate_limited or
	// overloaded: what the server saw. Whether the client read it all is
	// the client's Receipt.
	Outcome string
}

// Billed reports whether the generation is on the invoice.
func (g Generation) Billed() bool { return g.Prompt > 0 || g.Output > 0 }

// ID is the generation's name in genHeader and in receipts.
func (g Generation) ID() string { return fmt.Sprintf("%s/%d/%d", g.NS, g.Index, g.Seq) }

// ModelServer is an OpenAI-compatible chat-completions server that bills
// every request it accepts, per job (the job is named by a tag in the
// prompt), the way a provider's invoice would: the prompt and every token
// it generated, including tokens generated after the client gave up on a
// non-streaming call, which a provider finishes and bills. Prompt tokens
// are counted as the provider estimates them (content bytes / 4, rounded
// up), so a difference with the record is never a tokenizer's.
//
// Paths are /w/<who>/v1/chat/completions: each worker process (and the
// baseline) gets its own base URL, so the ledger knows who called.
type ModelServer struct {
	// Plan is the generation plan of the seq-th request of a job.
	Plan     func(ns string, index, seq int) GenPlan
	Recorder Recorder
	// JobName names a job for the fault events (its id).
	JobName func(ns string, index int) string

	mu       sync.Mutex
	seq      map[string]int
	gens     []Generation
	inflight map[string]int
}

var (
	pathRe = regexp.MustCompile(`^/w/([a-z0-9._-]+)/v1/chat/completions$`)
	tagRe  = regexp.MustCompile(`\[chaos (aj|bl) (\d+)\]`)
)

type chatRequest struct {
	Model    string `json:"model"`
	Messages []struct {
		Content string `json:"content"`
	} `json:"messages"`
	MaxTokens int  `json:"max_tokens"`
	Stream    bool `json:"stream"`
}

func (s *ModelServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	m := pathRe.FindStringSubmatch(r.URL.Path)
	body, err := io.ReadAll(r.Body)
	var req chatRequest
	if m == nil || err != nil || json.Unmarshal(body, &req) != nil {
		http.Error(w, `{"error":{"type":"invalid_request_error","code":"bad_request"}}`, http.StatusBadRequest)
		return
	}
	var prompt string
	for _, msg := range req.Messages {
		prompt += msg.Content
	}
	tag := tagRe.FindStringSubmatch(prompt)
	if tag == nil {
		http.Error(w, `{"error":{"type":"invalid_request_error","code":"no_chaos_tag"}}`, http.StatusBadRequest)
		return
	}
	ns, index := tag[1], atoi(tag[2])
	s.mu.Lock()
	if s.seq == nil {
		s.seq, s.inflight = map[string]int{}, map[string]int{}
	}
	key := ns + "/" + tag[2]
	seq := s.seq[key]
	s.seq[key]++
	s.inflight[m[1]]++
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.inflight[m[1]]--
		s.mu.Unlock()
	}()

	p := s.Plan(ns, index, seq)
	p.Tokens = max(1, min(p.Tokens, req.MaxTokens))
	if p.Fault.Total > 0 {
		p.PerToken = p.Fault.Total / time.Duration(p.Tokens)
	}
	g := Generation{NS: ns, Index: index, Seq: seq, Who: m[1], Stream: req.Stream, Model: req.Model, Fault: p.Fault.Kind,
		Start: time.Now(), Prompt: (int64(len(prompt)) + 3) / 4}
	if p.Fault.Kind != "" && s.Recorder != nil {
		route := "plain"
		if req.Stream {
			route = "stream"
		}
		s.Recorder.Fault(Event{Kind: p.Fault.Kind, Where: m[1], Op: route, Job: s.JobName(ns, index)})
	}
	w.Header().Set(genHeader, g.ID())
	defer func() {
		g.End = time.Now()
		s.mu.Lock()
		s.gens = append(s.gens, g)
		s.mu.Unlock()
	}()
	switch p.Fault.Kind {
	case ModelRateLimited:
		g.Prompt, g.Outcome = 0, "rate_limited"
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Retry-After", strconv.Itoa(p.Fault.RetryAfter))
		w.WriteHeader(http.StatusTooManyRequests)
		_, _ = io.WriteString(w, `{"error":{"message":"Rate limit reached for requests","type":"requests","param":null,"code":"rate_limit_exceeded"}}`)
		return
	case ModelOverloaded:
		g.Prompt, g.Outcome = 0, "overloaded"
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(p.Fault.Status)
		_, _ = io.WriteString(w, `{"error":{"message":"The server is overloaded","type":"overloaded_error","param":null,"code":null}}`)
		return
	}
	if req.Stream {
		s.stream(w, r, p, &g)
	} else {
		s.plain(w, r, p, &g)
	}
}

// wait sleeps d; it returns false if the client went away first (and
// follow is set: a generation that stops with its client).
func wait(r *http.Request, d time.Duration, follow bool) bool {
	if !follow {
		time.Sleep(d)
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-r.Context().Done():
		return false
	case <-t.C:
		return true
	}
}

// plain answers a non-streaming request. The generation always runs to its
// end and is billed whole: a provider finishes a non-streaming generation
// whether or not its client is still there.
func (s *ModelServer) plain(w http.ResponseWriter, r *http.Request, p GenPlan, g *Generation) {
	wait(r, p.Fault.Delay+p.Prefill+time.Duration(p.Tokens)*p.PerToken, false)
	g.Output = int64(p.Tokens)
	if p.Fault.Kind == ModelCut {
		g.Outcome = fmt.Sprintf("cut@%d", p.Fault.CutAfter)
		if p.Fault.CutAfter >= 0 {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusOK)
			_, _ = io.WriteString(w, `{"id":"chatcmpl-chaos","object":"chat.completion","model":`)
			w.(http.Flusher).Flush()
		}
		panic(http.ErrAbortHandler)
	}
	if r.Context().Err() != nil {
		g.Outcome = "client_gone"
		return
	}
	body, _ := json.Marshal(map[string]any{
		"id": "chatcmpl-chaos", "object": "chat.completion", "model": g.Model,
		"choices": []any{map[string]any{"index": 0, "finish_reason": "stop",
			"message": map[string]any{"role": "assistant", "content": strings.Repeat("tok ", p.Tokens)}}},
		"usage": map[string]any{"prompt_tokens": g.Prompt, "completion_tokens": g.Output, "total_tokens": g.Prompt + g.Output},
	})
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	g.Outcome = "written"
	if _, err := w.Write(body); err != nil {
		g.Outcome = "client_gone"
	}
}

// stream answers a streaming request with server-sent events and the
// usage chunk. The generation stops when the client goes away, billing
// what was generated (a late stream is only slow: a provider stops a
// stream whose client left).
func (s *ModelServer) stream(w http.ResponseWriter, r *http.Request, p GenPlan, g *Generation) {
	const follow = true
	gone := func() { g.Outcome = "client_gone" }
	if !wait(r, p.Fault.Delay+p.Prefill, follow) {
		gone()
		return
	}
	if p.Fault.Kind == ModelCut && p.Fault.CutAfter < 0 {
		g.Outcome = "cut@-1"
		panic(http.ErrAbortHandler)
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	f := w.(http.Flusher)
	f.Flush()
	send := func(v any) bool {
		b, _ := json.Marshal(v)
		if _, err := fmt.Fprintf(w, "data: %s\n\n", b); err != nil {
			return false
		}
		f.Flush()
		return r.Context().Err() == nil
	}
	for i := 0; i < p.Tokens; i++ {
		if p.Fault.Kind == ModelCut && i == p.Fault.CutAfter {
			g.Outcome = fmt.Sprintf("cut@%d", i)
			panic(http.ErrAbortHandler)
		}
		if !wait(r, p.PerToken, follow) {
			gone()
			return
		}
		g.Output++
		ok := send(map[string]any{"id": "chatcmpl-chaos", "object": "chat.completion.chunk", "model": g.Model,
			"choices": []any{map[string]any{"index": 0, "delta": map[string]any{"content": "tok "}, "finish_reason": nil}}})
		if !ok {
			gone()
			return
		}
	}
	ok := send(map[string]any{"id": "chatcmpl-chaos", "object": "chat.completion.chunk", "model": g.Model,
		"choices": []any{map[string]any{"index": 0, "delta": map[string]any{}, "finish_reason": "stop"}}}) &&
		send(map[string]any{"id": "chatcmpl-chaos", "object": "chat.completion.chunk", "model": g.Model, "choices": []any{},
			"usage": map[string]any{"prompt_tokens": g.Prompt, "completion_tokens": g.Output, "total_tokens": g.Prompt + g.Output}})
	if ok {
		_, err := io.WriteString(w, "data: [DONE]\n\n")
		f.Flush()
		ok = err == nil
	}
	if !ok {
		gone()
		return
	}
	g.Outcome = "written"
}

// Generations are every request accepted so far.
func (s *ModelServer) Generations() []Generation {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Generation(nil), s.gens...)
}

// InFlight is how many calls from who are open now.
func (s *ModelServer) InFlight(who string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.inflight[who]
}

func atoi(s string) int {
	n, _ := strconv.Atoi(s)
	return n
}
