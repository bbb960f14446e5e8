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

	"github.com/aijobs/aijobs/pkg/job"
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
	// ModelFlexRefused refuses a flex request for want of capacity
	// (OpenAI's flex 429 "Resource Unavailable", not a rate limit);
	// nothing is billed. Requests in other lanes are never refused so.
	ModelFlexRefused = "model_flex_refused"
)

// The lanes' pace against the plan's: flex answers twice slower, priority
// twice as fast. The laned route's p99s (env.go) are set from them.
const (
	flexPace     = 2.0
	priorityPace = 0.5
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
	// OnPoll moves a stall or a cut of the background shape (responses.go)
	// from the create to a poll: a poll is free, a create is a generation,
	// and both must be faulted. Chat completions, which have no polls,
	// ignore it.
	OnPoll bool
}

// GenPlan is one generation's shape: its tokens and pacing, and its fault.
type GenPlan struct {
	Tokens   int
	Prefill  time.Duration
	PerToken time.Duration
	Fault    ModelFault
	// FlexRefused refuses the request for want of capacity if it is made
	// in the flex lane (ModelFlexRefused), before any other fault: the
	// provider's flex pool turns it away at once.
	FlexRefused bool
	// CachedPart is the share of the prompt the provider reads from its
	// prompt cache (0: a miss), and ReasoningPart the share of a
	// non-streamed answer's output that is reasoning: both are parts of
	// the counts, reported as OpenAI reports them (usage.go).
	CachedPart, ReasoningPart float64
	// AtStandard serves a priority request at standard speed and price,
	// as OpenAI's priority processing does past its ramp rate limit.
	AtStandard bool
	// AnswerBytes pads the answer's text to this many bytes, the knob
	// pkg/model/fake reads (`[[fake:answer_bytes=N]]` in the prompt):
	// the tokens billed stay the plan's, the text grows past the record's
	// inline limit so the answer goes to the payload store.
	AnswerBytes int
}

var answerBytesRe = regexp.MustCompile(`\[\[fake:answer_bytes=(\d+)\]\]`)

// maxAnswerBytes bounds the knob as pkg/model/fake's MaxAnswerBytes does.
const maxAnswerBytes = 16 << 20

// answerBytes is the answer size a prompt asks for (0: none asked).
func answerBytes(prompt string) int {
	m := answerBytesRe.FindStringSubmatch(prompt)
	if m == nil {
		return 0
	}
	return min(atoi(m[1]), maxAnswerBytes)
}

// answerText is an answer of visible tokens, padded to p's AnswerBytes.
func (p GenPlan) answerText(visible int) string {
	return strings.Repeat("tok ", visible) + p.padding(visible)
}

// padding is what pads visible tokens of "tok " to p's AnswerBytes: a
// stream sends it with its last token, so only a stream read whole is
// the whole answer.
func (p GenPlan) padding(visible int) string {
	return strings.Repeat("x", max(0, p.AnswerBytes-4*visible))
}

// inLane is p as served in lane l: flex slower and priority faster (a
// late generation takes its time whatever the lane: its fault is its
// length).
func (p GenPlan) inLane(l job.Lane) GenPlan {
	pace := 1.0
	switch {
	case p.Fault.Total > 0:
	case l == job.Flex:
		pace = flexPace
	case l == job.Priority:
		pace = priorityPace
	}
	p.Prefill = time.Duration(float64(p.Prefill) * pace)
	p.PerToken = time.Duration(float64(p.PerToken) * pace)
	return p
}

// Generation is one request the model server accepted, as the provider's
// invoice and logs would show it.
type Generation struct {
	NS     string
	Index  int
	Seq    int // the request's rank among this job's requests
	Who    string
	Stream bool
	// Background is a create of the Responses API's background shape
	// (responses.go): it runs on the server whatever its clients do.
	Background bool
	Model      string
	Fault      string
	Start      time.Time
	End        time.Time
	// Prompt and Output are the billed tokens; Cached is the part of
	// Prompt read from the prompt cache (billed at the cached input
	// price), Reasoning the part of Output that is reasoning (billed as
	// output).
	Prompt, Output    int64
	Cached, Reasoning int64
	// Outcome is written, client_gone, cut@<tokens>, rate_limited,
	// overloaded or capacity_unavailable: what the server saw; a
	// background generation's is completed, generating or
	// cancelled@<tokens> (responses.go). Whether the client read it all
	// is the client's Receipt.
	Outcome string
	// Lane is the service tier the request asked for (standard when it
	// named none): the lanes' counts are by it. Served is the tier that
	// served it and that the answer's service_tier names (Lane, but
	// standard for a priority request past the ramp limit): the ledger
	// prices the generation at Served's price, as the provider bills it.
	Lane, Served job.Lane
}

// Billed reports whether the generation is on the invoice.
func (g Generation) Billed() bool { return g.Prompt > 0 || g.Output > 0 }

// Tokens are the generation's billed counts, as job.Price.Bill takes them.
func (g Generation) Tokens() job.Tokens {
	return job.Tokens{Input: g.Prompt, Output: g.Output, CachedInput: g.Cached}
}

// ServedLane is the lane the generation is billed in: Served, or the lane
// asked for when none is set (a ledger entry made by hand, in tests).
func (g Generation) ServedLane() job.Lane {
	if g.Served == "" {
		return g.Lane
	}
	return g.Served
}

// AtStandard reports a billed priority request served at standard.
func (g Generation) AtStandard() bool {
	return g.Billed() && g.Lane == job.Priority && g.ServedLane() == job.Standard
}

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
// baseline) gets its own base URL, so the ledger knows who called. The
// Responses API's background shape is served beside it, at
// /w/<who>/v1/responses (responses.go).
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
	// bg are the background generations by id, kept for the whole run
	// (OpenAI keeps one about ten minutes): any worker may poll any id,
	// since the one resuming a generation is not the one that made it.
	bg    map[string]*bgGen
	bgAll []*bgGen
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
	// MaxCompletionTokens is the output cap; the chaos models answer as
	// OpenAI's current models do (gpt-5.x, o-series), which refuse the
	// older max_tokens with 400 unsupported_parameter
	// (langchain-ai/langchainjs#8641, langgenius/dify#24307).
	MaxCompletionTokens int             `json:"max_completion_tokens"`
	MaxTokens           json.RawMessage `json:"max_tokens"`
	Stream              bool            `json:"stream"`
	// ServiceTier is the lane: "flex" or "priority", absent for standard.
	ServiceTier string `json:"service_tier"`
}

// tierLane is the lane a request's service_tier asks for, and false for
// a tier the provider does not sell (the provider sends only flex and
// priority, and nothing for standard).
func tierLane(tier string) (job.Lane, bool) {
	switch l := job.Lane(tier); l {
	case "":
		return job.Standard, true
	case job.Flex, job.Priority:
		return l, true
	}
	return "", false
}

// ServeHTTP counts the request open for its caller while it runs (the
// harness kills a worker only mid-call) and hands it to its shape.
func (s *ModelServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	who := ""
	m, bg := pathRe.FindStringSubmatch(r.URL.Path), responsesRe.FindStringSubmatch(r.URL.Path)
	switch {
	case m != nil:
		who = m[1]
	case bg != nil:
		who = bg[1]
	default:
		badRequest(w, "no_such_path")
		return
	}
	s.mu.Lock()
	if s.seq == nil {
		s.seq, s.inflight, s.bg = map[string]int{}, map[string]int{}, map[string]*bgGen{}
	}
	s.inflight[who]++
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.inflight[who]--
		s.mu.Unlock()
	}()
	if bg != nil {
		s.responses(w, r, bg)
		return
	}
	s.chat(w, r, who)
}

func badRequest(w http.ResponseWriter, code string) {
	http.Error(w, `{"error":{"type":"invalid_request_error","code":"`+code+`"}}`, http.StatusBadRequest)
}

// taggedJob is the job a prompt's tag names, and its namespace.
func taggedJob(prompt string) (ns string, index int, ok bool) {
	tag := tagRe.FindStringSubmatch(prompt)
	if tag == nil {
		return "", 0, false
	}
	return tag[1], atoi(tag[2]), true
}

// admit gives a request of job (ns, index) its rank among the job's
// requests, and its plan capped at the request's maximum: the plan of the
// seq-th request is the same whatever shape the request takes.
func (s *ModelServer) admit(ns string, index, maxTokens int) (int, GenPlan) {
	key := fmt.Sprintf("%s/%d", ns, index)
	s.mu.Lock()
	seq := s.seq[key]
	s.seq[key]++
	s.mu.Unlock()
	p := s.Plan(ns, index, seq)
	p.Tokens = max(1, min(p.Tokens, maxTokens))
	if p.Fault.Total > 0 {
		p.PerToken = p.Fault.Total / time.Duration(p.Tokens)
	}
	return seq, p
}

// accept is a request for model whose prompt names its job: the
// generation it starts in the ledger's terms, and its plan. A prompt with
// no tag is answered 400 (ok false).
func (s *ModelServer) accept(w http.ResponseWriter, who, model, prompt string, maxTokens int) (Generation, GenPlan, bool) {
	ns, index, ok := taggedJob(prompt)
	if !ok {
		badRequest(w, "no_chaos_tag")
		return Generation{}, GenPlan{}, false
	}
	seq, p := s.admit(ns, index, maxTokens)
	p.AnswerBytes = answerBytes(prompt)
	in := promptTokens(prompt)
	return Generation{NS: ns, Index: index, Seq: seq, Who: who, Model: model, Fault: p.Fault.Kind,
		Start: time.Now(), Prompt: in, Cached: cachedTokens(in, p.CachedPart), Lane: job.Standard, Served: job.Standard}, p, true
}

// laned serves g in the lane its request asked for: the lane that
// serves it (standard for a priority request the plan serves at
// standard), paced as that lane is, and a flex request's refusal for
// want of capacity, which comes before the plan's fault: the pool turns
// it away at once, and the fault never happens.
func laned(g *Generation, p GenPlan, asked job.Lane) GenPlan {
	served := asked
	if asked == job.Priority && p.AtStandard {
		served = job.Standard
	}
	g.Lane, g.Served = asked, served
	p = p.inLane(served)
	if asked == job.Flex && p.FlexRefused {
		p.Fault = ModelFault{Kind: ModelFlexRefused}
		g.Fault = ModelFlexRefused
	}
	return p
}

// faulted reports an injected fault the moment it is decided.
func (s *ModelServer) faulted(f ModelFault, who, op, ns string, index int) {
	if f.Kind != "" && s.Recorder != nil {
		s.Recorder.Fault(Event{Kind: f.Kind, Where: who, Op: op, Job: s.JobName(ns, index)})
	}
}

// refuse answers a 429, an overloaded error or a flex capacity refusal
// for f, and says which ("" when f refuses nothing): the provider bills
// none of them.
func refuse(w http.ResponseWriter, f ModelFault) string {
	switch f.Kind {
	case ModelRateLimited:
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Retry-After", strconv.Itoa(f.RetryAfter))
		w.WriteHeader(http.StatusTooManyRequests)
		_, _ = io.WriteString(w, `{"error":{"message":"Rate limit reached for requests","type":"requests","param":null,"code":"rate_limit_exceeded"}}`)
		return "rate_limited"
	case ModelOverloaded:
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(f.Status)
		_, _ = io.WriteString(w, `{"error":{"message":"The server is overloaded","type":"overloaded_error","param":null,"code":null}}`)
		return "overloaded"
	case ModelFlexRefused:
		return refuseCapacity(w)
	}
	return ""
}

// refuseCapacity answers OpenAI's refusal of a flex request for want of
// capacity: a 429 whose code names no rate limit (the provider classes
// it capacity_unavailable, and the worker moves the call to its next
// lane). It is not billed.
func refuseCapacity(w http.ResponseWriter) string {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusTooManyRequests)
	_, _ = io.WriteString(w, `{"error":{"message":"Resource unavailable: flex processing has no capacity now, try again later","type":null,"param":null,"code":"resource_unavailable"}}`)
	return "capacity_unavailable"
}

// promptTokens is the prompt as the provider counts it, and as the
// worker's ceiling bounds it: content bytes / 4, rounded up.
func promptTokens(prompt string) int64 { return (int64(len(prompt)) + 3) / 4 }

// record adds g to the ledger, and returns its place there.
func (s *ModelServer) record(g Generation) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.gens = append(s.gens, g)
	return len(s.gens) - 1
}

// chat is one chat-completions request: one generation.
func (s *ModelServer) chat(w http.ResponseWriter, r *http.Request, who string) {
	body, err := io.ReadAll(r.Body)
	var req chatRequest
	if err != nil || json.Unmarshal(body, &req) != nil {
		badRequest(w, "bad_request")
		return
	}
	var prompt string
	for _, msg := range req.Messages {
		prompt += msg.Content
	}
	if req.MaxTokens != nil {
		badRequest(w, "unsupported_parameter")
		return
	}
	lane, ok := tierLane(req.ServiceTier)
	if !ok {
		badRequest(w, "invalid_service_tier")
		return
	}
	g, p, ok := s.accept(w, who, req.Model, prompt, req.MaxCompletionTokens)
	if !ok {
		return
	}
	g.Stream, p = req.Stream, laned(&g, p, lane)
	route := "plain"
	if req.Stream {
		route = "stream"
	}
	s.faulted(p.Fault, who, route, g.NS, g.Index)
	w.Header().Set(genHeader, g.ID())
	defer func() {
		g.End = time.Now()
		s.record(g)
	}()
	if out := refuse(w, p.Fault); out != "" {
		g.Prompt, g.Cached, g.Outcome = 0, 0, out
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
	g.Output, g.Reasoning = int64(p.Tokens), reasoningTokens(p)
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
		"id": "chatcmpl-chaos", "object": "chat.completion", "model": g.Model, "service_tier": tierName(g.Served),
		"choices": []any{map[string]any{"index": 0, "finish_reason": "stop",
			"message": map[string]any{"role": "assistant", "content": p.answerText(int(g.Output - g.Reasoning))}}},
		"usage": chatUsage(*g),
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
	tier := tierName(g.Served)
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
		text := "tok "
		if i == p.Tokens-1 {
			text += p.padding(p.Tokens)
		}
		ok := send(map[string]any{"id": "chatcmpl-chaos", "object": "chat.completion.chunk", "model": g.Model, "service_tier": tier,
			"choices": []any{map[string]any{"index": 0, "delta": map[string]any{"content": text}, "finish_reason": nil}}})
		if !ok {
			gone()
			return
		}
	}
	ok := send(map[string]any{"id": "chatcmpl-chaos", "object": "chat.completion.chunk", "model": g.Model, "service_tier": tier,
		"choices": []any{map[string]any{"index": 0, "delta": map[string]any{}, "finish_reason": "stop"}}}) &&
		send(map[string]any{"id": "chatcmpl-chaos", "object": "chat.completion.chunk", "model": g.Model, "service_tier": tier,
			"choices": []any{}, "usage": chatUsage(*g)})
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

// Generations are every request accepted so far, each background
// generation as its invoice will show it: billed whole unless it was
// cancelled first (nobody else stops it).
func (s *ModelServer) Generations() []Generation {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := append([]Generation(nil), s.gens...)
	now := time.Now()
	for _, b := range s.bgAll {
		b.settle(&out[b.at], now)
	}
	return out
}

// InFlight is how many calls from who are open now: its requests, and the
// background generations it is waiting for (polled within a second).
func (s *ModelServer) InFlight(who string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n, now := s.inflight[who], time.Now()
	for _, b := range s.bgAll {
		if b.lastWho == who && now.Sub(b.lastAt) < time.Second && pendingStatus(b.status(now)) {
			n++
		}
	}
	return n
}

func atoi(s string) int {
	n, _ := strconv.Atoi(s)
	return n
}
