// Package anthropictest is a local server of Anthropic's Message Batches
// wire (create, retrieve, list, results: docs/lanes.md, "The
// providers' batch wires") for the batch lane's tests, so the lane runs in `make
// test` without the network. It also answers whole (not streamed)
// Messages calls, for the lanes a job takes when it cannot wait.
//
// A request's last message may script its item with markers:
// [[anthropic:error=TYPE]] errors it with that error type,
// [[anthropic:expire]] expires it the first time it is batched,
// [[anthropic:nousage]] answers it without its counts.
//
// Its Messages calls answer as the API does, whole or streamed, each
// behaviour beside the documentation or public report it copies
// (docs/providers.md, "Anthropic and Bedrock"): the prompt cache's reads
// and writes counted apart from input_tokens (CacheRead, CacheWrite), the
// tier that served the call in usage.service_tier (Tier), and a Claude 4
// model's refusal of temperature with top_p.
package anthropictest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/aijobs/aijobs/pkg/model/batchtest"
)

// Server is the wire's state. Its zero value is ready; Handler serves it.
type Server struct {
	// Polls is how many reads of a batch find it still processing before
	// it ends.
	Polls int
	// CacheRead and CacheWrite are the prompt tokens every answer says it
	// read from the prompt cache and wrote to it, on top of the prompt's
	// input_tokens: the API counts them apart ("Prompt caching": total
	// input = input_tokens + cache_creation_input_tokens +
	// cache_read_input_tokens,
	// https://docs.anthropic.com/en/docs/build-with-claude/prompt-caching#tracking-cache-performance).
	CacheRead, CacheWrite int64
	// Tier is the service_tier a call's usage names (empty: "standard");
	// a batch's answers name "batch" (https://docs.anthropic.com/en/api/service-tiers).
	Tier string
	// Nonconforming answers a call or batch request that forces a tool
	// with an input its schema refuses (schema.go), so a test can watch
	// the answer fail validation.
	Nonconforming bool

	mu      sync.Mutex
	batches batchtest.Batches[*batch]
	billed  []Usage
}

// Usage is an answer's counts in the API's own words: Input is its
// input_tokens, which leaves out the cache's reads and writes.
type Usage struct {
	Input, CacheRead, CacheWrite, Output int64
	Tier                                 string
}

// Bill is what Anthropic charges for u at the given prices per token of
// input and output (the input price a multiple of 20): cache reads at a
// tenth of the input price, writes (five-minute) at 1.25 times it
// (https://docs.anthropic.com/en/docs/build-with-claude/prompt-caching#pricing).
func (u Usage) Bill(input, output int64) int64 {
	return u.Input*input + u.CacheRead*input/10 + u.CacheWrite*input*5/4 + u.Output*output
}

// Billed is every answer's usage, in the order answered.
func (s *Server) Billed() []Usage {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Usage(nil), s.billed...)
}

type batch struct {
	id      string
	created time.Time
	reqs    []Request
	results [][]byte
}

// Request is one request of a batch.
type Request struct {
	CustomID string `json:"custom_id"`
	Params   Params `json:"params"`
}

// Params is a Messages API body, a call's or a batch request's.
type Params struct {
	Model         string   `json:"model"`
	MaxTokens     int      `json:"max_tokens"`
	Stream        bool     `json:"stream"`
	System        string   `json:"system"`
	Temperature   *float64 `json:"temperature"`
	TopP          *float64 `json:"top_p"`
	StopSequences []string `json:"stop_sequences"`
	Thinking      *struct {
		Type         string `json:"type"`
		BudgetTokens int    `json:"budget_tokens"`
	} `json:"thinking"`
	Messages []Message `json:"messages"`
	// Tools and ToolChoice are a forced tool's (schema.go).
	Tools      []Tool      `json:"tools"`
	ToolChoice *ToolChoice `json:"tool_choice"`
	// Unknown are the members the API does not take, which it refuses
	// (unknownRefusal).
	Unknown []string `json:"-"`
}

// UnmarshalJSON decodes p and notes the members it has no field for.
func (p *Params) UnmarshalJSON(b []byte) error {
	type plain Params
	if err := json.Unmarshal(b, (*plain)(p)); err != nil {
		return err
	}
	var members map[string]json.RawMessage
	if err := json.Unmarshal(b, &members); err != nil {
		return err
	}
	known := []string{"model", "max_tokens", "stream", "system", "temperature", "top_p", "stop_sequences", "thinking", "messages",
		"tools", "tool_choice"}
	for k := range members {
		if !slices.Contains(known, k) {
			p.Unknown = append(p.Unknown, k)
		}
	}
	slices.Sort(p.Unknown)
	return nil
}

// LoseCreates makes the next n creates lose their answer after the batch
// was made: the connection closes unanswered.
func (s *Server) LoseCreates(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.batches.LoseCreates(n)
}

// RefuseCreates makes the next n creates answer 429 without making a
// batch: a definite refusal.
func (s *Server) RefuseCreates(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.batches.RefuseCreates(n)
}

// Batches is how many batches were made.
func (s *Server) Batches() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.batches.Len()
}

// Requests are every batch's requests, in order.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Request
	for _, b := range s.batches.All() {
		out = append(out, b.Wire.reqs...)
	}
	return out
}

// Generated is how often the request custom id was answered (billed).
func (s *Server) Generated(id string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.batches.Generated(id)
}

// Calls is how many Messages calls were answered (outside batches).
func (s *Server) Calls() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.batches.Calls()
}

// Handler serves the wire at the API root.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/messages/batches", s.create)
	mux.HandleFunc("GET /v1/messages/batches", s.list)
	mux.HandleFunc("GET /v1/messages/batches/{id}", s.get)
	mux.HandleFunc("GET /v1/messages/batches/{id}/results", s.results)
	mux.HandleFunc("POST /v1/messages", s.call)
	return mux
}

func (s *Server) create(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Requests []Request `json:"requests"`
	}
	if r.Header.Get("Anthropic-Version") == "" || json.NewDecoder(r.Body).Decode(&in) != nil || len(in.Requests) == 0 {
		problem(w, http.StatusBadRequest, "invalid_request_error")
		return
	}
	s.mu.Lock()
	if s.batches.Refused() {
		s.mu.Unlock()
		problem(w, http.StatusTooManyRequests, "rate_limit_error")
		return
	}
	b := &batch{id: fmt.Sprintf("msgbatch_%06d", s.batches.Len()+1), created: time.Now().UTC(), reqs: in.Requests}
	s.batches.Add(b.id, b)
	lost := s.batches.Lost()
	obj := b.object()
	s.mu.Unlock()
	batchtest.Created(w, obj, lost)
}

// list answers the newest batches first, limit a page (20 unless
// given), from the one after after_id.
func (s *Server) list(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	page, more := s.batches.Page(r.URL.Query().Get("after_id"), batchtest.Limit(r.URL.Query().Get("limit"), 1000))
	var data []map[string]any
	last := ""
	for _, b := range page {
		data, last = append(data, b.Wire.object()), b.ID
	}
	s.mu.Unlock()
	batchtest.Reply(w, map[string]any{"data": data, "has_more": more, "last_id": last})
}

func (s *Server) get(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	b := s.batches.Find(r.PathValue("id"))
	if b == nil {
		problem(w, http.StatusNotFound, "not_found_error")
		return
	}
	if b.Read(s.Polls) {
		for _, q := range b.Wire.reqs {
			b.Wire.results = append(b.Wire.results, s.answerLocked(q))
		}
	}
	batchtest.Reply(w, b.Wire.object())
}

func (s *Server) results(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	b := s.batches.Find(r.PathValue("id"))
	if b == nil || !b.Ran() {
		problem(w, http.StatusNotFound, "not_found_error")
		return
	}
	w.Header().Set("Content-Type", "application/binary")
	for _, l := range b.Wire.results {
		_, _ = w.Write(l)
	}
}

func (s *Server) call(w http.ResponseWriter, r *http.Request) {
	var q Request
	if json.NewDecoder(r.Body).Decode(&q.Params) != nil {
		problem(w, http.StatusBadRequest, "invalid_request_error")
		return
	}
	if msg := refusal(q); msg != "" {
		refuse(w, http.StatusBadRequest, "invalid_request_error", msg)
		return
	}
	s.mu.Lock()
	q.CustomID = fmt.Sprint("call", s.batches.Call())
	m := s.messageLocked(q, true, false)
	s.mu.Unlock()
	if q.Params.Stream {
		stream(w, m)
		return
	}
	batchtest.Reply(w, m)
}

// claude4 names the Claude 4 models (claude-opus-4*, claude-sonnet-4*,
// claude-haiku-4*, their 4.1, 4.5 and 4.6 names included).
var claude4 = regexp.MustCompile(`claude-(opus|sonnet|haiku)-4`)

// opusWithoutTemperature names Claude Opus 4.7 and later 4.x models.
var opusWithoutTemperature = regexp.MustCompile(`claude-opus-4-([7-9]|[1-9][0-9])($|[-@:])`)

// refusal is why the API refuses q before answering it, or "". A Claude 4
// model takes temperature or top_p, never both: a 400
// invalid_request_error ("`temperature` and `top_p` cannot both be
// specified for this model. Please use only one.", as reported in
// https://github.com/BerriAI/litellm/issues/15097 and
// https://github.com/open-webui/open-webui/issues/17922 for Sonnet 4.5,
// https://github.com/Vali-98/ChatterUI/issues/564 for Sonnet 4.6, and
// https://github.com/open-webui/functions/pull/9 for Opus 4.1).
//
// Claude Opus 4.7 and later take no temperature at all: a 400
// invalid_request_error "`temperature` is deprecated for this model."
// whatever its value (platform.claude.com/docs/en/about-claude/models/
// migration-guide; UKGovernmentBEIS/inspect_ai#3721, HKUDS/nanobot#3418,
// and The-PR-Agent/pr-agent#2456 for Opus 4.8). aijobs refuses such a job
// at create (pkg/config's noTemperature), so no call carries one.
//
// A member the API does not take (a seed: the Messages API has none,
// docs.anthropic.com/en/api/messages) is a 400 "<member>: Extra inputs
// are not permitted", as reported for other members in amrit110/oli#7
// and Aider-AI/aider#3367. Thinking: see thinkingRefusal.
func refusal(q Request) string {
	if msg := blockRefusal(q.Params); msg != "" {
		return msg
	}
	if len(q.Params.Unknown) > 0 {
		return q.Params.Unknown[0] + ": Extra inputs are not permitted"
	}
	if msg := thinkingRefusal(q.Params); msg != "" {
		return msg
	}
	if msg := toolRefusal(q.Params); msg != "" {
		return msg
	}
	if opusWithoutTemperature.MatchString(q.Params.Model) && q.Params.Temperature != nil {
		return "`temperature` is deprecated for this model."
	}
	if claude4.MatchString(q.Params.Model) && q.Params.Temperature != nil && q.Params.TopP != nil {
		return "`temperature` and `top_p` cannot both be specified for this model. Please use only one."
	}
	return ""
}

// thinkingRefusal is why the API refuses p's extended thinking, or "":
// a budget below 1024 or not below max_tokens ("thinking.budget_tokens:
// must be >= 1024 and < max_tokens"), a model that does not think with a
// budget (before Claude 3.7 Sonnet; Claude 4.7 and later "reject requests
// that use it", platform.claude.com/docs/en/build-with-claude/extended-thinking),
// and a temperature other than 1 ("`temperature` may only be set to 1
// when thinking is enabled", as reported in MartialBE/one-hub#529) or a
// top_p below 0.95 (the same guide: top_p "between 1 and 0.95"). The
// messages of the last three, the model and top_p, are our reading of
// the guide, in the API's error shape.
func thinkingRefusal(p Params) string {
	t := p.Thinking
	switch {
	case t == nil || t.Type != "enabled":
		return ""
	case t.BudgetTokens < 1024 || t.BudgetTokens >= p.MaxTokens:
		return "thinking.budget_tokens: must be >= 1024 and < max_tokens"
	case !strings.Contains(p.Model, "claude-3-7-sonnet") && !claude4.MatchString(p.Model) || thinkingLast.MatchString(p.Model):
		return "thinking: extended thinking with budget_tokens is not supported for this model"
	case p.Temperature != nil && *p.Temperature != 1:
		return "`temperature` may only be set to 1 when thinking is enabled."
	case p.TopP != nil && *p.TopP < 0.95:
		return "`top_p` must be greater than or equal to 0.95 or unset when thinking is enabled."
	}
	return ""
}

// thinkingLast names the Claude 4.x models from 4.7 on.
var thinkingLast = regexp.MustCompile(`claude-(opus|sonnet|haiku)-4-([7-9]|[1-9][0-9])($|[-@:])`)

// stream writes m as the API streams it ("Streaming Messages",
// https://docs.anthropic.com/en/docs/build-with-claude/streaming):
// message_start carries the usage's input counts, cache included, and
// one output token; message_delta the stop reason and the usage again,
// cumulative.
func stream(w http.ResponseWriter, m map[string]any) {
	w.Header().Set("Content-Type", "text/event-stream")
	u, _ := m["usage"].(map[string]any)
	start := map[string]any{}
	for k, v := range m {
		start[k] = v
	}
	start["content"], start["stop_reason"] = []any{}, nil
	if u != nil {
		su := map[string]any{}
		for k, v := range u {
			su[k] = v
		}
		su["output_tokens"] = 1
		start["usage"] = su
	}
	events := append([]map[string]any{{"type": "message_start", "message": start}}, streamBlock(m)...)
	delta := map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": m["stop_reason"], "stop_sequence": nil}}
	if u != nil {
		delta["usage"] = u
	}
	events = append(events, map[string]any{"type": "content_block_stop", "index": 0}, delta, map[string]any{"type": "message_stop"})
	for _, ev := range events {
		b, _ := json.Marshal(ev)
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", ev["type"], b)
	}
}

var markers = batchtest.NewMarkers("anthropic", `error=([a-z_]+)`)

// answerLocked is q's result line (s.mu held).
func (s *Server) answerLocked(q Request) []byte {
	last := ""
	if n := len(q.Params.Messages); n > 0 {
		last = q.Params.Messages[n-1].Content
	}
	var res map[string]any
	switch sc := markers.Read(last); {
	case sc.Expire && s.batches.ExpireOnce(q.CustomID):
		res = map[string]any{"type": "expired"}
	case sc.Fail != "":
		res = map[string]any{"type": "errored", "error": map[string]any{"type": "error",
			"error": map[string]any{"type": sc.Fail, "message": "scripted"}}}
	case refusal(q) != "":
		res = map[string]any{"type": "errored", "error": map[string]any{"type": "error",
			"error": map[string]any{"type": "invalid_request_error", "message": refusal(q)}}}
	default:
		s.batches.Generate(q.CustomID)
		res = map[string]any{"type": "succeeded", "message": s.messageLocked(q, !sc.NoUsage, true)}
	}
	b, _ := json.Marshal(map[string]any{"custom_id": q.CustomID, "result": res})
	return append(b, '\n')
}

// messageLocked is q's answer (s.mu held): an echo of its id, its counts
// the prompt's characters over four, the cache's configured counts and
// the output's words; batched, its tier is "batch". A counted answer is
// billed.
func (s *Server) messageLocked(q Request, usage, batched bool) map[string]any {
	prompt := len(q.Params.System) / 4
	for _, m := range q.Params.Messages {
		prompt += len(m.Content)/4 + 1 + MediaTokens*m.media()
	}
	content, stop, words := s.content(q.Params, q.CustomID)
	m := map[string]any{"id": "msg_" + q.CustomID, "type": "message", "role": "assistant", "model": q.Params.Model,
		"content": content, "stop_reason": stop}
	if usage {
		u := Usage{Input: int64(prompt), CacheRead: s.CacheRead, CacheWrite: s.CacheWrite,
			Output: int64(min(words, max(q.Params.MaxTokens, 1))), Tier: s.Tier}
		if u.Tier == "" {
			u.Tier = "standard"
		}
		if batched {
			u.Tier = "batch"
		}
		s.billed = append(s.billed, u)
		m["usage"] = map[string]any{"input_tokens": u.Input, "cache_creation_input_tokens": u.CacheWrite,
			"cache_read_input_tokens": u.CacheRead, "output_tokens": u.Output, "service_tier": u.Tier}
	}
	return m
}

// object is b as the API answers it.
func (b *batch) object() map[string]any {
	counts := map[string]int{"processing": 0, "succeeded": 0, "errored": 0, "canceled": 0, "expired": 0}
	status := "in_progress"
	if b.results == nil {
		counts["processing"] = len(b.reqs)
	} else {
		status = "ended"
		for _, l := range b.results {
			var r struct {
				Result struct{ Type string } `json:"result"`
			}
			_ = json.Unmarshal(l, &r)
			counts[r.Result.Type]++
		}
	}
	return map[string]any{"id": b.id, "type": "message_batch", "processing_status": status, "request_counts": counts,
		"created_at": b.created.Format(time.RFC3339Nano), "expires_at": b.created.Add(24 * time.Hour).Format(time.RFC3339Nano),
		"results_url": nil}
}

func problem(w http.ResponseWriter, status int, typ string) { refuse(w, status, typ, "refused") }

// refuse writes the API's error body (https://docs.anthropic.com/en/api/errors).
func refuse(w http.ResponseWriter, status int, typ, message string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"type": "error", "error": map[string]any{"type": typ, "message": message}})
}
