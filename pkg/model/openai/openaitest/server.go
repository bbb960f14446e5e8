// Package openaitest is a local server of OpenAI's batch wire (files and
// batches: docs/architecture.md, "The providers' batch wires") for the batch lane's
// tests: the openai provider's own, the collector's and the dev server's,
// so the whole lane runs in `make test` without the network.
//
// A request's last message may script its item with markers:
// [[openai:status=N]] answers it with HTTP status N, [[openai:expire]]
// leaves it unanswered (batch_expired) the first time it is batched,
// [[openai:nousage]] answers it without its counts. The server also
// answers whole (not streamed: "stream": false in the provider entry)
// chat completions, for the lanes a job
// takes when its deadline cannot wait for a batch.
package openaitest

import (
	"bytes"
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

// Server is the batch wire's state. Its zero value is ready; Handler
// serves it.
type Server struct {
	// Polls is how many reads of a batch find it still running before it
	// ends.
	Polls int
	// FailValidation makes every batch fail validation: it ends "failed"
	// with no output or error file.
	FailValidation bool

	mu      sync.Mutex
	files   map[string][]byte
	batches []*batch // newest last
	lose    int
	made    map[string]int
	expired map[string]bool
	calls   int
	seq     int
}

type batch struct {
	obj   map[string]any
	polls int
}

// Line is one request of an input file.
type Line struct {
	CustomID string `json:"custom_id"`
	Method   string `json:"method"`
	URL      string `json:"url"`
	Body     struct {
		Model       string `json:"model"`
		MaxTokens   int    `json:"max_tokens"`
		ServiceTier string `json:"service_tier"`
		Stream      bool   `json:"stream"`
		Messages    []struct {
			Role    string `json:"role"`
			Content string `json:"content"`
		} `json:"messages"`
	} `json:"body"`
}

// LoseCreates makes the next n batch creates lose their answer after the
// batch was made: the connection closes unanswered, as a collector dying
// mid-call would see it.
func (s *Server) LoseCreates(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lose = n
}

// Batches is how many batches were made.
func (s *Server) Batches() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.batches)
}

// Generated is how often the request custom id was answered (billed).
func (s *Server) Generated(id string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.made[id]
}

// Calls is how many chat completions were answered (outside batches).
func (s *Server) Calls() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls
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

// Handler serves the batch wire at the API root (what a client's base
// URL names): POST /files, GET /files/{id}/content, POST and GET
// /batches, GET /batches/{id}.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /files", s.upload)
	mux.HandleFunc("GET /files/{id}/content", s.content)
	mux.HandleFunc("POST /batches", s.create)
	mux.HandleFunc("GET /batches", s.list)
	mux.HandleFunc("GET /batches/{id}", s.get)
	mux.HandleFunc("POST /chat/completions", s.chat)
	return mux
}

// chat answers one chat completion as a batch answers its lines.
func (s *Server) chat(w http.ResponseWriter, r *http.Request) {
	var l Line
	if json.NewDecoder(r.Body).Decode(&l.Body) != nil || l.Body.Stream {
		problem(w, http.StatusBadRequest, "invalid_request_error")
		return
	}
	s.mu.Lock()
	s.calls++
	l.CustomID = fmt.Sprint("call", s.calls)
	s.mu.Unlock()
	reply(w, completion(l, true))
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
	reply(w, map[string]any{"id": id, "object": "file", "purpose": "batch", "bytes": len(b)})
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
	if json.NewDecoder(r.Body).Decode(&in) != nil || in.Endpoint != "/v1/chat/completions" || in.CompletionWindow != "24h" {
		problem(w, http.StatusBadRequest, "invalid_request_error")
		return
	}
	s.mu.Lock()
	if _, ok := s.files[in.InputFileID]; !ok {
		s.mu.Unlock()
		problem(w, http.StatusBadRequest, "invalid_request_error")
		return
	}
	b := &batch{obj: map[string]any{"id": s.nextLocked("batch_"), "object": "batch", "endpoint": in.Endpoint,
		"input_file_id": in.InputFileID, "completion_window": in.CompletionWindow, "status": "validating",
		"metadata": in.Metadata, "created_at": time.Now().Unix()}}
	s.batches = append(s.batches, b)
	lose := s.lose > 0
	if lose {
		s.lose--
	}
	obj := b.snapshot()
	s.mu.Unlock()
	if lose {
		if conn, _, err := http.NewResponseController(w).Hijack(); err == nil {
			_ = conn.Close()
			return
		}
	}
	reply(w, obj)
}

// list answers the batches newest first, a page at a time (limit, after).
func (s *Server) list(w http.ResponseWriter, r *http.Request) {
	limit, err := strconv.Atoi(r.URL.Query().Get("limit"))
	if err != nil || limit < 1 || limit > 100 {
		limit = 20
	}
	after := r.URL.Query().Get("after")
	s.mu.Lock()
	var data []map[string]any
	skipping := after != ""
	for i := len(s.batches) - 1; i >= 0; i-- {
		o := s.batches[i].snapshot()
		if skipping {
			skipping = o["id"] != after
			continue
		}
		data = append(data, o)
	}
	s.mu.Unlock()
	more := len(data) > limit
	if more {
		data = data[:limit]
	}
	page := map[string]any{"object": "list", "data": data, "has_more": more}
	if len(data) > 0 {
		page["first_id"], page["last_id"] = data[0]["id"], data[len(data)-1]["id"]
	}
	reply(w, page)
}

// get answers a batch, ending it once it has been read Polls times.
func (s *Server) get(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, b := range s.batches {
		if b.obj["id"] != r.PathValue("id") {
			continue
		}
		if b.polls++; b.polls > s.Polls && b.obj["status"] == "validating" {
			s.runLocked(b)
		}
		reply(w, b.snapshot())
		return
	}
	problem(w, http.StatusNotFound, "invalid_request_error")
}

// runLocked answers every request of b and ends it (s.mu held).
func (s *Server) runLocked(b *batch) {
	if s.FailValidation {
		b.obj["status"] = "failed"
		return
	}
	var out, errs bytes.Buffer
	expired := false
	dec := json.NewDecoder(bytes.NewReader(s.files[b.obj["input_file_id"].(string)]))
	for {
		var l Line
		if dec.Decode(&l) != nil {
			break
		}
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

var statusMarker = regexp.MustCompile(`\[\[openai:status=(\d{3})\]\]`)

// answerLocked is l's result line, whether it goes to the error file, and
// whether it expired.
func (s *Server) answerLocked(l Line) ([]byte, bool, bool) {
	last := ""
	if n := len(l.Body.Messages); n > 0 {
		last = l.Body.Messages[n-1].Content
	}
	res := map[string]any{"id": "batch_req_" + l.CustomID, "custom_id": l.CustomID, "response": nil, "error": nil}
	failed, expired := true, false
	if s.expired == nil {
		s.expired = map[string]bool{}
	}
	switch m := statusMarker.FindStringSubmatch(last); {
	case strings.Contains(last, "[[openai:expire]]") && !s.expired[l.CustomID]:
		expired, s.expired[l.CustomID] = true, true
		res["error"] = map[string]any{"code": "batch_expired", "message": "not run before the completion window ended"}
	case m != nil:
		code, _ := strconv.Atoi(m[1])
		res["response"] = map[string]any{"status_code": code, "body": map[string]any{
			"error": map[string]any{"message": "scripted", "type": "invalid_request_error", "code": nil}}}
	default:
		failed = false
		if s.made == nil {
			s.made = map[string]int{}
		}
		s.made[l.CustomID]++
		res["response"] = map[string]any{"status_code": 200, "body": completion(l, !strings.Contains(last, "[[openai:nousage]]"))}
	}
	b, _ := json.Marshal(res)
	return append(b, '\n'), failed, expired
}

// completion is l's answer: an echo of its last message, its counts the
// prompt's characters over four and the output's words.
func completion(l Line, usage bool) map[string]any {
	prompt := 0
	for _, m := range l.Body.Messages {
		prompt += len(m.Content)/4 + 1
	}
	text := "echo " + l.CustomID
	out := min(len(strings.Fields(text)), max(l.Body.MaxTokens, 1))
	c := map[string]any{"id": "chatcmpl-" + l.CustomID, "object": "chat.completion", "model": l.Body.Model,
		"choices": []map[string]any{{"index": 0, "message": map[string]any{"role": "assistant", "content": text}, "finish_reason": "stop"}}}
	if usage {
		c["usage"] = map[string]any{"prompt_tokens": prompt, "completion_tokens": out, "total_tokens": prompt + out}
	}
	return c
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

func reply(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

func problem(w http.ResponseWriter, status int, typ string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"message": "refused", "type": typ, "code": nil}})
}
