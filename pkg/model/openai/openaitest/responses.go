package openaitest

import (
	"encoding/json"
	"net/http"
	"slices"
)

// The Responses API in background mode
// (https://platform.openai.com/docs/guides/background): a create answers
// the response queued, and a read of it answers it completed, with its
// usage (input_tokens_details.cached_tokens and
// output_tokens_details.reasoning_tokens, parts of the counts:
// https://platform.openai.com/docs/api-reference/responses/object) and
// the tier that served it.

// responsesBody is a create's body.
type responsesBody struct {
	Model           string   `json:"model"`
	MaxOutputTokens int      `json:"max_output_tokens"`
	Temperature     *float64 `json:"temperature"`
	TopP            *float64 `json:"top_p"`
	Reasoning       *struct {
		Effort string `json:"effort"`
	} `json:"reasoning"`
	Background  bool      `json:"background"`
	ServiceTier string    `json:"service_tier"`
	Input       []Message `json:"input"`
	// Text is the response_format, as text.format (schema.go).
	Text *responsesText `json:"text"`
}

// createResponse starts one background generation, billed as it starts.
func (s *Server) createResponse(w http.ResponseWriter, r *http.Request) {
	var raw map[string]json.RawMessage
	var in responsesBody
	if json.NewDecoder(r.Body).Decode(&raw) != nil {
		problem(w, http.StatusBadRequest, "invalid_request_error")
		return
	}
	if e := unknownParameter(raw); e != nil {
		writeJSON(w, http.StatusBadRequest, e)
		return
	}
	if b, _ := json.Marshal(raw); json.Unmarshal(b, &in) != nil || in.Model == "" {
		problem(w, http.StatusBadRequest, "invalid_request_error")
		return
	}
	// The output cap goes in max_output_tokens, which every model takes
	// (https://platform.openai.com/docs/api-reference/responses/create).
	b := Body{Model: in.Model, MaxCompletionTokens: in.MaxOutputTokens, ServiceTier: in.ServiceTier, Messages: in.Input,
		Temperature: in.Temperature, TopP: in.TopP, ResponseFormat: in.Text.format()}
	if in.Reasoning != nil {
		b.ReasoningEffort = in.Reasoning.Effort
	}
	bill, ok := s.admit(w, b, samplingRefusal, "resp_call")
	if !ok {
		return
	}
	id := bill.ID
	s.mu.Lock()
	if s.resps == nil {
		s.resps = map[string]map[string]any{}
	}
	s.resps[id] = responseObject(id, bill, "completed")
	s.mu.Unlock()
	writeJSON(w, http.StatusOK, responseObject(id, bill, "queued"))
}

// getResponse answers a response as it now is.
func (s *Server) getResponse(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	o, ok := s.resps[r.PathValue("id")]
	s.mu.Unlock()
	if !ok {
		problem(w, http.StatusNotFound, "invalid_request_error")
		return
	}
	writeJSON(w, http.StatusOK, o)
}

// cancelResponse answers a response; one already completed stays so.
func (s *Server) cancelResponse(w http.ResponseWriter, r *http.Request) {
	s.getResponse(w, r)
}

// responseObject is the response id, billed as bill, in status; only a
// completed one has its output and usage.
func responseObject(id string, bill Bill, status string) map[string]any {
	o := map[string]any{"id": id, "object": "response", "created_at": 1700000000, "status": status,
		"background": true, "model": bill.Model, "service_tier": bill.Tier, "output": []any{},
		"error": nil, "incomplete_details": nil, "usage": nil, "store": true}
	if status != "completed" {
		return o
	}
	o["output"] = []any{map[string]any{"type": "message", "id": "msg_" + id, "status": "completed", "role": "assistant",
		"content": []any{map[string]any{"type": "output_text", "text": bill.Text, "annotations": []any{}}}}}
	o["usage"] = map[string]any{"input_tokens": bill.Input, "output_tokens": bill.Output,
		"total_tokens":          bill.Input + bill.Output,
		"input_tokens_details":  map[string]any{"cached_tokens": bill.Cached},
		"output_tokens_details": map[string]any{"reasoning_tokens": bill.Reasoning}}
	return o
}

// responsesParameters are the create body's members the fake knows, of
// those the Responses API takes
// (platform.openai.com/docs/api-reference/responses/create): it has no
// stop and no seed, and answers a member it does not know 400
// ("Unknown parameter: 'stop'. Did you mean 'store'?", as reported in
// openJiuwen-ai/agent-core#768; the code unknown_parameter is our
// reading, in OpenAI's error shape).
var responsesParameters = []string{"model", "input", "max_output_tokens", "temperature", "top_p", "reasoning",
	"background", "store", "service_tier", "text"}

// unknownParameter is the 400 to a create naming a member outside
// responsesParameters, or nil.
func unknownParameter(raw map[string]json.RawMessage) map[string]any {
	for k := range raw {
		if !slices.Contains(responsesParameters, k) {
			return errorBody("Unknown parameter: '"+k+"'.", "invalid_request_error", k, "unknown_parameter")
		}
	}
	return nil
}
