// Package openaitest is a local OpenAI server for tests: the batch wire
// (files and batches: docs/lanes.md, "The providers' batch
// wires"), so the whole batch lane runs in `make test` without the
// network, and chat completions (whole and streamed) and background
// responses, for the lanes a job takes when its deadline cannot wait for
// a batch. It answers as OpenAI does by model family (family.go): what
// each family refuses, the usage it reports (cached and reasoning tokens
// as parts of the counts), the service tier that served each call. Each
// behaviour cites where OpenAI, or a public bug report, says so.
//
// A request's last message may script its item with markers:
// [[openai:status=N]] answers it with HTTP status N, [[openai:expire]]
// leaves it unanswered (batch_expired) the first time it is batched,
// [[openai:nousage]] answers it without its counts. An embeddings call
// (embeddings.go) with [[openai:status=N]] in any input is answered N.
package openaitest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aijobs/aijobs/pkg/model/batchtest"
)

// Server is the batch wire's state. Its zero value is ready; Handler
// serves it.
type Server struct {
	// Polls is how many reads of a batch find it still running before it
	// ends.
	Polls int
	// FailValidation makes every batch fail validation: it ends "failed"
	// with no output or error file.
	FailValidation bool

	// CachedTokens is how many of each prompt's tokens the server says
	// it read from its prompt cache (at most the whole prompt): OpenAI
	// caches a repeated prefix and reports it in
	// prompt_tokens_details.cached_tokens, a part of prompt_tokens
	// (https://platform.openai.com/docs/guides/prompt-caching).
	CachedTokens int64
	// DowngradePriority answers a priority call as priority processing
	// past its ramp rate limit does: served, and billed, at standard,
	// service_tier "default" (servedTier).
	DowngradePriority bool
	// RefuseFlex is how many of the next flex calls (chat completions or
	// responses) the flex pool refuses (flexRefusal).
	RefuseFlex int
	// Nonconforming answers a body with a json_schema response_format
	// with JSON its schema refuses (schema.go), so a test can watch the
	// answer fail validation.
	Nonconforming bool

	mu      sync.Mutex
	bills   []Bill
	resps   map[string]map[string]any
	files   map[string][]byte
	batches batchtest.Batches[*batch]
	seq     int
	// embedded counts each embeddings call's inputs (EmbeddingCalls).
	embedded []int
}

type batch struct {
	obj map[string]any
}

// Line is one request of an input file.
type Line struct {
	CustomID string `json:"custom_id"`
	Method   string `json:"method"`
	URL      string `json:"url"`
	Body     Body   `json:"body"`
}

// Body is a chat-completions request, as a call or a batch line sends it.
type Body struct {
	Model string `json:"model"`
	// MaxTokens is nil when the body has no max_tokens: a reasoning model
	// refuses the field whatever its value.
	MaxTokens           *int     `json:"max_tokens"`
	MaxCompletionTokens int      `json:"max_completion_tokens"`
	Temperature         *float64 `json:"temperature"`
	TopP                *float64 `json:"top_p"`
	Stop                []string `json:"stop"`
	Seed                *int64   `json:"seed"`
	ReasoningEffort     string   `json:"reasoning_effort"`
	ServiceTier         string   `json:"service_tier"`
	Stream              bool     `json:"stream"`
	StreamOptions       *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
	Messages []Message `json:"messages"`
	// ResponseFormat is the body's response_format (schema.go).
	ResponseFormat *Format `json:"response_format"`
	// Input, Dimensions and EncodingFormat are an embeddings request's
	// (a /v1/embeddings batch line's body).
	Input          []string `json:"input"`
	Dimensions     int      `json:"dimensions"`
	EncodingFormat string   `json:"encoding_format"`
}

// Endpoints a batch may be made for, each line of its file on the one
// its create names (the Batch API's `endpoint`).
const (
	ChatEndpoint       = "/v1/chat/completions"
	EmbeddingsEndpoint = "/v1/embeddings"
	// MaxBatchEmbeddingInputs is the most inputs of all the lines of one
	// /v1/embeddings batch: "/v1/embeddings batches are also restricted
	// to a maximum of 50,000 embedding inputs across all requests in the
	// batch" (the batch create's `endpoint`).
	MaxBatchEmbeddingInputs = 50_000
)

// Message is one message of a request: its content a string, or parts
// (parts.go), Content then their text.
type Message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
	Parts   []Part `json:"-"`
}

// Cap is the output cap b asks for, in whichever field it names it.
func (b Body) Cap() int {
	if b.MaxTokens != nil {
		return *b.MaxTokens
	}
	return b.MaxCompletionTokens
}

// LoseCreates makes the next n batch creates lose their answer after the
// batch was made: the connection closes unanswered, as a collector dying
// mid-call would see it.
func (s *Server) LoseCreates(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.batches.LoseCreates(n)
}

// Batches is how many batches were made.
func (s *Server) Batches() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.batches.Len()
}

// Generated is how often the request custom id was answered (billed).
func (s *Server) Generated(id string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.batches.Generated(id)
}

// Calls is how many calls were answered outside batches: chat
// completions, whole or streamed, and background responses.
func (s *Server) Calls() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.batches.Calls()
}

// Inputs are the lines of every input file uploaded, in no order.
func (s *Server) Inputs() []Line {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Line
	for id, f := range s.files {
		if !strings.HasPrefix(id, "file-in") {
			continue
		}
		dec := json.NewDecoder(bytes.NewReader(f))
		for {
			var l Line
			if dec.Decode(&l) != nil {
				break
			}
			out = append(out, l)
		}
	}
	return out
}

// Handler serves at the API root (what a client's base URL names): POST
// /files, GET /files/{id}/content, POST and GET /batches, GET
// /batches/{id}, POST /chat/completions, POST /responses, GET
// /responses/{id} and POST /responses/{id}/cancel.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /files", s.upload)
	mux.HandleFunc("GET /files/{id}/content", s.content)
	mux.HandleFunc("POST /batches", s.create)
	mux.HandleFunc("GET /batches", s.list)
	mux.HandleFunc("GET /batches/{id}", s.get)
	mux.HandleFunc("POST /chat/completions", s.chat)
	mux.HandleFunc("POST /embeddings", s.embeddings)
	mux.HandleFunc("POST /responses", s.createResponse)
	mux.HandleFunc("GET /responses/{id}", s.getResponse)
	mux.HandleFunc("POST /responses/{id}/cancel", s.cancelResponse)
	return mux
}

func (s *Server) upload(w http.ResponseWriter, r *http.Request) {
	if r.FormValue("purpose") != "batch" {
		problem(w, http.StatusBadRequest, "invalid_request_error")
		return
	}
	f, _, err := r.FormFile("file")
	if err != nil {
		problem(w, http.StatusBadRequest, "invalid_request_error")
		return
	}
	b, _ := io.ReadAll(f)
	s.mu.Lock()
	id := s.nextLocked("file-in")
	if s.files == nil {
		s.files = map[string][]byte{}
	}
	s.files[id] = b
	s.mu.Unlock()
	batchtest.Reply(w, map[string]any{"id": id, "object": "file", "purpose": "batch", "bytes": len(b)})
}

func (s *Server) content(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	f, ok := s.files[r.PathValue("id")]
	s.mu.Unlock()
	if !ok {
		problem(w, http.StatusNotFound, "invalid_request_error")
		return
	}
	w.Header().Set("Content-Type", "application/jsonl")
	_, _ = w.Write(f)
}

func (s *Server) create(w http.ResponseWriter, r *http.Request) {
	var in struct {
		InputFileID      string            `json:"input_file_id"`
		Endpoint         string            `json:"endpoint"`
		CompletionWindow string            `json:"completion_window"`
		Metadata         map[string]string `json:"metadata"`
	}
	if json.NewDecoder(r.Body).Decode(&in) != nil || (in.Endpoint != ChatEndpoint && in.Endpoint != EmbeddingsEndpoint) || in.CompletionWindow != "24h" {
		problem(w, http.StatusBadRequest, "invalid_request_error")
		return
	}
	s.mu.Lock()
	if _, ok := s.files[in.InputFileID]; !ok {
		s.mu.Unlock()
		problem(w, http.StatusBadRequest, "invalid_request_error")
		return
	}
	id := s.nextLocked("batch_")
	b := &batch{obj: map[string]any{"id": id, "object": "batch", "endpoint": in.Endpoint,
		"input_file_id": in.InputFileID, "completion_window": in.CompletionWindow, "status": "validating",
		"metadata": in.Metadata, "created_at": time.Now().Unix()}}
	s.batches.Add(id, b)
	lost := s.batches.Lost()
	obj := b.snapshot()
	s.mu.Unlock()
	batchtest.Created(w, obj, lost)
}

// list answers the batches newest first, a page at a time (limit,
// after); an after that names no batch pages past them all.
func (s *Server) list(w http.ResponseWriter, r *http.Request) {
	after := r.URL.Query().Get("after")
	s.mu.Lock()
	batches, more := s.batches.Page(after, batchtest.Limit(r.URL.Query().Get("limit"), 100))
	if after != "" && s.batches.Find(after) == nil {
		batches, more = nil, false
	}
	var data []map[string]any
	for _, b := range batches {
		data = append(data, b.Wire.snapshot())
	}
	s.mu.Unlock()
	page := map[string]any{"object": "list", "data": data, "has_more": more}
	if len(data) > 0 {
		page["first_id"], page["last_id"] = data[0]["id"], data[len(data)-1]["id"]
	}
	batchtest.Reply(w, page)
}

// get answers a batch, ending it once it has been read Polls times.
func (s *Server) get(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	b := s.batches.Find(r.PathValue("id"))
	if b == nil {
		problem(w, http.StatusNotFound, "invalid_request_error")
		return
	}
	if b.Read(s.Polls) {
		s.runLocked(b.Wire)
	}
	batchtest.Reply(w, b.Wire.snapshot())
}

// runLocked answers every request of b and ends it (s.mu held).
func (s *Server) runLocked(b *batch) {
	lines := s.linesLocked(b)
	if s.FailValidation || !valid(lines, b.obj["endpoint"].(string)) {
		b.obj["status"] = "failed"
		return
	}
	var out, errs bytes.Buffer
	expired := false
	for _, l := range lines {
		line, failed, exp := s.answerLocked(l)
		expired = expired || exp
		if failed {
			errs.Write(line)
		} else {
			out.Write(line)
		}
	}
	b.obj["status"] = "completed"
	if expired {
		b.obj["status"] = "expired"
	}
	for _, f := range []struct {
		key  string
		body *bytes.Buffer
	}{{"output_file_id", &out}, {"error_file_id", &errs}} {
		if f.body.Len() > 0 {
			id := s.nextLocked("file-out")
			s.files[id], b.obj[f.key] = f.body.Bytes(), id
		}
	}
}

// linesLocked are the lines of b's input file (s.mu held).
func (s *Server) linesLocked(b *batch) []Line {
	var lines []Line
	dec := json.NewDecoder(bytes.NewReader(s.files[b.obj["input_file_id"].(string)]))
	for {
		var l Line
		if dec.Decode(&l) != nil {
			return lines
		}
		lines = append(lines, l)
	}
}

// valid reports whether lines pass a batch's validation for endpoint:
// every line on it, and an embeddings batch within its inputs.
func valid(lines []Line, endpoint string) bool {
	inputs := 0
	for _, l := range lines {
		if l.URL != endpoint {
			return false
		}
		inputs += len(l.Body.Input)
	}
	return inputs <= MaxBatchEmbeddingInputs
}

var markers = batchtest.NewMarkers("openai", `status=(\d{3})`)

// answerLocked is l's result line, whether it goes to the error file, and
// whether it expired.
func (s *Server) answerLocked(l Line) ([]byte, bool, bool) {
	last := ""
	if n := len(l.Body.Messages); n > 0 {
		last = l.Body.Messages[n-1].Content
	}
	res := map[string]any{"id": "batch_req_" + l.CustomID, "custom_id": l.CustomID, "response": nil, "error": nil}
	if l.URL == EmbeddingsEndpoint {
		return s.embedLineLocked(l, res)
	}
	failed, expired := true, false
	switch sc := markers.Read(last); {
	case sc.Expire && s.batches.ExpireOnce(l.CustomID):
		expired = true
		res["error"] = map[string]any{"code": "batch_expired", "message": "not run before the completion window ended"}
	case sc.Fail != "":
		code, _ := strconv.Atoi(sc.Fail)
		res["response"] = map[string]any{"status_code": code, "body": map[string]any{
			"error": map[string]any{"message": "scripted", "type": "invalid_request_error", "code": nil}}}
	case chatRefusal(l.Body) != nil: // a batch line is refused as the call would be
		res["response"] = map[string]any{"status_code": http.StatusBadRequest, "body": chatRefusal(l.Body)}
	default:
		failed = false
		s.batches.Generate(l.CustomID)
		bill := s.billLocked(l.CustomID, l.Body, servedTier(l.Body.ServiceTier, false))
		res["response"] = map[string]any{"status_code": 200, "body": completion(l.CustomID, bill, !sc.NoUsage)}
	}
	b, _ := json.Marshal(res)
	return append(b, '\n'), failed, expired
}

// embedLineLocked is an embeddings line's result, res filled in, and
// whether it goes to the error file: answered as a call is (embedAnswer)
// and billed once, only when it answered 200.
func (s *Server) embedLineLocked(l Line, res map[string]any) ([]byte, bool, bool) {
	b := embeddingBody{Model: l.Body.Model, Input: l.Body.Input, EncodingFormat: l.Body.EncodingFormat, Dimensions: l.Body.Dimensions}
	status, body, tokens := embedAnswer(b)
	if status == http.StatusOK {
		s.batches.Generate(l.CustomID)
		s.billEmbeddingLocked(b, tokens)
	}
	res["response"] = map[string]any{"status_code": status, "body": body}
	out, _ := json.Marshal(res)
	return append(out, '\n'), status != http.StatusOK, false
}

func (b *batch) snapshot() map[string]any {
	o := make(map[string]any, len(b.obj))
	for k, v := range b.obj {
		o[k] = v
	}
	return o
}

func (s *Server) nextLocked(prefix string) string {
	s.seq++
	return fmt.Sprintf("%s%06d", prefix, s.seq)
}

func problem(w http.ResponseWriter, status int, typ string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"message": "refused", "type": typ, "code": nil}})
}
