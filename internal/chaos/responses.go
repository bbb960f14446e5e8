package chaos

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"time"

	"github.com/aijobs/aijobs/pkg/job"
)

// The Responses API's background mode, as pkg/model/openai/responses.go
// speaks it: a create starts a generation the server keeps by id and runs
// on its own time, whatever its clients do; a poll reads it, a cancel
// stops it. Only the create is a generation on the invoice (and in the
// ledger): polls and cancels are free. Without this shape the chaos run
// could not show what resuming a paid generation saves.

var responsesRe = regexp.MustCompile(`^/w/([a-z0-9._-]+)/v1/responses(?:/([A-Za-z0-9_-]+)(/cancel)?)?$`)

type responsesCreate struct {
	Model string `json:"model"`
	Input []struct {
		Content string `json:"content"`
	} `json:"input"`
	MaxOutputTokens int  `json:"max_output_tokens"`
	Background      bool `json:"background"`
	// ServiceTier is the lane, as on chat completions (tierLane).
	ServiceTier string `json:"service_tier"`
}

// bgGen is one background generation. Its state is a function of the
// clock and of a cancel, so it needs no goroutine: it runs whether or not
// anyone polls, as a provider's does.
type bgGen struct {
	at    int // its entry in the ledger
	id    string
	model string
	fault ModelFault

	prompt, cached int64
	tokens         int
	// plan pads the answer's text (GenPlan.AnswerBytes).
	plan GenPlan
	// reasoning is the part of tokens that is reasoning, made first.
	reasoning int
	// served is the tier serving it, which its objects name.
	served            job.Lane
	start             time.Time
	prefill, perToken time.Duration

	// answered: the create's answer was written whole, so its creator
	// knows the id (a stalled create whose client left, or a cut one,
	// leaves a generation nobody knows of, billed whole).
	answered  bool
	cancelled time.Time
	polls     int
	// cut: the poll cut of the plan's fault happened (once).
	cut bool
	// lastWho polled it last, at lastAt: the worker waiting for it.
	lastWho string
	lastAt  time.Time
}

func (b *bgGen) done() time.Time {
	return b.start.Add(b.prefill + time.Duration(b.tokens)*b.perToken)
}

// made is how many tokens it had generated at t.
func (b *bgGen) made(t time.Time) int {
	d := t.Sub(b.start) - b.prefill
	switch {
	case d < 0:
		return 0
	case b.perToken <= 0 || !t.Before(b.done()):
		return b.tokens
	}
	return min(b.tokens, int(d/b.perToken))
}

func (b *bgGen) status(t time.Time) string {
	switch {
	case !b.cancelled.IsZero():
		return "cancelled"
	case !t.Before(b.done()):
		return "completed"
	case t.Before(b.start.Add(b.prefill)):
		return "queued"
	}
	return "in_progress"
}

func pendingStatus(s string) bool { return s == "queued" || s == "in_progress" }

// settle is g, the generation's ledger entry, as the invoice will show
// it at t: cancelled, what the cancel left; else billed whole, since it
// completes whether or not anyone reads it.
func (b *bgGen) settle(g *Generation, t time.Time) {
	if !b.cancelled.IsZero() {
		return // the cancel wrote it
	}
	g.Output, g.Reasoning, g.End, g.Outcome = int64(b.tokens), int64(b.reasoning), b.done(), "completed"
	if t.Before(b.done()) {
		g.Outcome = "generating"
	}
	if !b.answered {
		g.Outcome += ", id never answered"
	}
}

// object is the response as a create, poll or cancel answers it at t.
func (b *bgGen) object(t time.Time) map[string]any {
	st := b.status(t)
	o := map[string]any{"id": b.id, "object": "response", "created_at": b.start.Unix(), "status": st, "model": b.model,
		"background": true, "output": []any{}, "usage": nil, "error": nil, "incomplete_details": nil, "service_tier": tierName(b.served)}
	switch st {
	case "completed":
		o["output"] = []any{map[string]any{"type": "message", "id": "msg_" + b.id, "status": "completed", "role": "assistant",
			"content": []any{map[string]any{"type": "output_text", "text": b.plan.answerText(b.tokens - b.reasoning), "annotations": []any{}}}}}
		o["usage"] = responsesUsage(b.prompt, b.cached, int64(b.tokens), int64(b.reasoning))
	case "cancelled":
		made := b.made(b.cancelled)
		o["usage"] = responsesUsage(b.prompt, b.cached, int64(made), int64(min(made, b.reasoning)))
	}
	return o
}

// responses serves the background shape; m is the path's match: the
// caller, the id, "/cancel".
func (s *ModelServer) responses(w http.ResponseWriter, r *http.Request, m []string) {
	switch {
	case m[2] == "" && r.Method == http.MethodPost:
		s.create(w, r, m[1])
	case m[2] != "" && m[3] == "" && r.Method == http.MethodGet:
		s.poll(w, r, m[1], m[2])
	case m[2] != "" && m[3] != "" && r.Method == http.MethodPost:
		s.cancelResponse(w, m[2])
	default:
		w.WriteHeader(http.StatusMethodNotAllowed)
	}
}

// create starts one background generation: one generation in the ledger,
// keyed by the job's tag as a chat request is, so the same plan and
// faults apply. A 429 or overloaded answer starts nothing.
func (s *ModelServer) create(w http.ResponseWriter, r *http.Request, who string) {
	var req responsesCreate
	body, err := io.ReadAll(r.Body)
	if err != nil || json.Unmarshal(body, &req) != nil || !req.Background {
		badRequest(w, "bad_request")
		return
	}
	lane, ok := tierLane(req.ServiceTier)
	if !ok {
		badRequest(w, "invalid_service_tier")
		return
	}
	var prompt string
	for _, in := range req.Input {
		prompt += in.Content
	}
	g, p, ok := s.accept(w, who, req.Model, prompt, req.MaxOutputTokens)
	if !ok {
		return
	}
	g.Background, p = true, laned(&g, p, lane)
	ns, index, seq := g.NS, g.Index, g.Seq
	s.faulted(p.Fault, who, "background", ns, index)
	if out := refuse(w, p.Fault); out != "" {
		g.Prompt, g.Cached, g.Outcome, g.End = 0, 0, out, time.Now()
		s.record(g)
		return
	}
	b := &bgGen{id: fmt.Sprintf("resp_%s_%d_%d", ns, index, seq), model: req.Model, fault: p.Fault, prompt: g.Prompt, cached: g.Cached,
		tokens: p.Tokens, reasoning: int(reasoningTokens(p)), served: g.Served, start: g.Start, prefill: p.Prefill, perToken: p.PerToken, plan: p}
	b.at = s.record(g)
	s.mu.Lock()
	s.bg[b.id] = b
	s.bgAll = append(s.bgAll, b)
	s.mu.Unlock()
	s.answerCreate(w, r, b, who)
}

// answerCreate answers the create under its faults: a stall before the
// answer (the generation runs meanwhile), or a cut once it started, so
// its client never learns the id and it runs to its end, billed whole.
func (s *ModelServer) answerCreate(w http.ResponseWriter, r *http.Request, b *bgGen, who string) {
	f := b.fault
	if f.Kind == ModelStallHeaders && !f.OnPoll && !wait(r, f.Delay, true) {
		return // the client left: it never learns the id
	}
	if f.Kind == ModelCut && !f.OnPoll {
		s.cutAnswer(w, b, time.Now(), f.CutAfter >= 0)
	}
	if s.answer(w, b, time.Now(), who, true) == nil {
		s.mu.Lock()
		b.answered = true
		s.mu.Unlock()
	}
}

// poll reads a generation by id, whoever made it. Its faults (OnPoll) are
// a stall of the first poll, or a cut of the first answer that shows it
// completed; either is free, the next poll reads it again.
func (s *ModelServer) poll(w http.ResponseWriter, r *http.Request, who, id string) {
	s.mu.Lock()
	b := s.bg[id]
	n := 0
	if b != nil {
		n, b.lastWho, b.lastAt = b.polls, who, time.Now()
		b.polls++
	}
	s.mu.Unlock()
	if b == nil {
		notFound(w, id)
		return
	}
	f := b.fault
	if f.Kind == ModelStallHeaders && f.OnPoll && n == 0 && !wait(r, f.Delay, true) {
		return
	}
	now := time.Now()
	if f.Kind == ModelCut && f.OnPoll && s.cutDue(b, now) {
		s.cutAnswer(w, b, now, f.CutAfter >= 0)
	}
	_ = s.answer(w, b, now, who, true)
}

// cutDue reports whether the answer at now is the one the plan cuts: the
// first that shows the generation completed.
func (s *ModelServer) cutDue(b *bgGen, now time.Time) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if b.cut || b.status(now) != "completed" {
		return false
	}
	b.cut = true
	return true
}

// cancelResponse stops a generation still running: it is billed the
// prompt and the tokens it made by then. A finished one is answered as it
// is. The answer never counts as the generation read (no genHeader): the
// provider discards it.
func (s *ModelServer) cancelResponse(w http.ResponseWriter, id string) {
	now := time.Now()
	s.mu.Lock()
	b := s.bg[id]
	if b != nil && pendingStatus(b.status(now)) {
		b.cancelled = now
		g := &s.gens[b.at]
		made := b.made(now)
		g.Output, g.Reasoning, g.End, g.Outcome = int64(made), int64(min(made, b.reasoning)), now, fmt.Sprintf("cancelled@%d", made)
		if !b.answered {
			g.Outcome += ", id never answered"
		}
	}
	s.mu.Unlock()
	if b == nil {
		notFound(w, id)
		return
	}
	_ = s.answer(w, b, now, "", false)
}

// answer writes the response at now. An answer that carries the completed
// output names the generation (genHeader) with its length, so the
// reader's receipt says whether it read the answer whole; who, when set,
// is now the one waiting for it.
func (s *ModelServer) answer(w http.ResponseWriter, b *bgGen, now time.Time, who string, named bool) error {
	s.mu.Lock()
	body, _ := json.Marshal(b.object(now))
	completed := b.status(now) == "completed"
	gen := s.gens[b.at].ID()
	if who != "" {
		b.lastWho, b.lastAt = who, now
	}
	s.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	if named && completed {
		w.Header().Set(genHeader, gen)
	}
	_, err := w.Write(body)
	return err
}

// cutAnswer drops the connection: before the headers, or (mid) half-way
// through the body, after headers that promised all of it.
func (s *ModelServer) cutAnswer(w http.ResponseWriter, b *bgGen, now time.Time, mid bool) {
	if mid {
		s.mu.Lock()
		body, _ := json.Marshal(b.object(now))
		completed, gen := b.status(now) == "completed", s.gens[b.at].ID()
		s.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		if completed {
			w.Header().Set(genHeader, gen)
		}
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(body[:len(body)/2])
		w.(http.Flusher).Flush()
	}
	panic(http.ErrAbortHandler)
}

func notFound(w http.ResponseWriter, id string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusNotFound)
	_, _ = fmt.Fprintf(w, `{"error":{"message":"No response found with id '%s'.","type":"invalid_request_error","param":null,"code":null}}`, id)
}
