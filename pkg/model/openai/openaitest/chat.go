package openaitest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
)

// Bill is what the server billed one answer: the counts its usage
// reported (Cached a part of Input, Reasoning a part of Output) and the
// tier that served it.
type Bill struct {
	ID, Model, Tier                  string
	Input, Cached, Output, Reasoning int64
	// Text is the answer's content (Server.text).
	Text string
}

// Bills are the answers billed so far, calls and batch lines, in order.
func (s *Server) Bills() []Bill {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Bill(nil), s.bills...)
}

// billLocked counts the answer to id's request b, served at tier, and
// records it (s.mu held): the prompt is its messages' characters over
// four (one more each), CachedTokens of it read from the cache; the
// output is the echo's words within the cap, and a reasoning model's
// reasoning within what the cap leaves.
func (s *Server) billLocked(id string, b Body, tier string) Bill {
	bill := Bill{ID: id, Model: b.Model, Tier: tier, Text: s.text(id, b)}
	for _, m := range b.Messages {
		bill.Input += int64(len(m.Content)/4 + 1)
	}
	bill.Input += b.media() * MediaTokens
	bill.Cached = min(max(s.CachedTokens, 0), bill.Input)
	limit := b.Cap()
	visible := min(int64(len(strings.Fields(bill.Text))), int64(max(limit, 1)))
	if reasonsByDefault(b.Model) {
		bill.Reasoning = reasoningTokens
		if limit > 0 {
			bill.Reasoning = max(min(bill.Reasoning, int64(limit)-visible), 0)
		}
	}
	bill.Output = visible + bill.Reasoning
	s.bills = append(s.bills, bill)
	return bill
}

// echo is the answer's text.
func echo(id string) string { return "echo " + id }

// usage is bill as OpenAI reports a chat completion's: prompt_tokens
// holds the cached tokens and completion_tokens the reasoning ones, the
// details naming those parts (https://platform.openai.com/docs/api-reference/chat/object).
func usage(bill Bill) map[string]any {
	return map[string]any{"prompt_tokens": bill.Input, "completion_tokens": bill.Output,
		"total_tokens":          bill.Input + bill.Output,
		"prompt_tokens_details": map[string]any{"cached_tokens": bill.Cached, "audio_tokens": 0},
		"completion_tokens_details": map[string]any{"reasoning_tokens": bill.Reasoning, "audio_tokens": 0,
			"accepted_prediction_tokens": 0, "rejected_prediction_tokens": 0}}
}

// completion is the whole answer to id billed as bill, with its counts
// when withUsage.
func completion(id string, bill Bill, withUsage bool) map[string]any {
	c := map[string]any{"id": "chatcmpl-" + id, "object": "chat.completion", "created": 1700000000, "model": bill.Model,
		"choices": []map[string]any{{"index": 0, "message": map[string]any{"role": "assistant", "content": bill.Text,
			"refusal": nil}, "logprobs": nil, "finish_reason": "stop"}},
		"service_tier": bill.Tier, "system_fingerprint": "fp_openaitest"}
	if withUsage {
		c["usage"] = usage(bill)
	}
	return c
}

// chat answers one chat completion, whole or streamed.
func (s *Server) chat(w http.ResponseWriter, r *http.Request) {
	var b Body
	if json.NewDecoder(r.Body).Decode(&b) != nil {
		problem(w, http.StatusBadRequest, "invalid_request_error")
		return
	}
	bill, ok := s.admit(w, b, refusal, "call")
	if !ok {
		return
	}
	id := bill.ID
	if !b.Stream {
		writeJSON(w, http.StatusOK, completion(id, bill, true))
		return
	}
	stream(w, id, bill, b.StreamOptions != nil && b.StreamOptions.IncludeUsage)
}

// admit takes body b in as the API does before it generates, on the
// chat and the Responses API alike: a body refuse refuses is answered
// 400, a flex call the full pool refuses 429, and anything else is
// billed under a new id starting with prefix. It reports whether b was
// admitted; when not, it has answered w.
func (s *Server) admit(w http.ResponseWriter, b Body, refuse func(Body) map[string]any, prefix string) (Bill, bool) {
	if e := partRefusal(b, strings.HasPrefix(prefix, "resp")); e != nil {
		writeJSON(w, http.StatusBadRequest, e)
		return Bill{}, false
	}
	if e := refuse(b); e != nil {
		writeJSON(w, http.StatusBadRequest, e)
		return Bill{}, false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if b.ServiceTier == "flex" && s.RefuseFlex > 0 {
		s.RefuseFlex--
		flexRefusal(w)
		return Bill{}, false
	}
	id := fmt.Sprint(prefix, s.batches.Call())
	return s.billLocked(id, b, servedTier(b.ServiceTier, s.DowngradePriority)), true
}

// stream writes the answer as chat.completion.chunk events: a role chunk,
// a chunk per word, a finish chunk, and, when include_usage asked for it,
// a last chunk with empty choices and the usage, then [DONE]
// (https://platform.openai.com/docs/api-reference/chat-streaming). Every
// chunk names the service tier, and carries "usage": null but the last.
func stream(w http.ResponseWriter, id string, bill Bill, withUsage bool) {
	w.Header().Set("Content-Type", "text/event-stream")
	chunk := func(delta map[string]any, reason any) map[string]any {
		c := map[string]any{"id": "chatcmpl-" + id, "object": "chat.completion.chunk", "created": 1700000000,
			"model": bill.Model, "service_tier": bill.Tier, "system_fingerprint": "fp_openaitest",
			"choices": []map[string]any{{"index": 0, "delta": delta, "logprobs": nil, "finish_reason": reason}}}
		if withUsage {
			c["usage"] = nil
		}
		return c
	}
	events := []map[string]any{chunk(map[string]any{"role": "assistant", "content": "", "refusal": nil}, nil)}
	for i, word := range strings.Fields(bill.Text) {
		if i > 0 {
			word = " " + word
		}
		events = append(events, chunk(map[string]any{"content": word}, nil))
	}
	events = append(events, chunk(map[string]any{}, "stop"))
	if withUsage {
		last := chunk(nil, nil)
		last["choices"], last["usage"] = []any{}, usage(bill)
		events = append(events, last)
	}
	for _, e := range events {
		b, _ := json.Marshal(e)
		fmt.Fprintf(w, "data: %s\n\n", b)
	}
	fmt.Fprint(w, "data: [DONE]\n\n")
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
