package modeltest

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"

	"github.com/aijobs/aijobs/pkg/job"
	"github.com/aijobs/aijobs/pkg/model"
)

// A request sent is billed even when its answer is lost: a whole answer
// at the worst case (the provider finishes the generation and bills it),
// a stream at what it told before the cut (docs/errors.md).
func lostAnswers(t *testing.T, s suite, wi Wire) {
	abort := func() { panic(http.ErrAbortHandler) }
	reset := func(w http.ResponseWriter) {
		conn, _, err := w.(http.Hijacker).Hijack()
		if err != nil {
			t.Errorf("hijack: %v", err)
			return
		}
		_ = conn.(*net.TCPConn).SetLinger(0) // close with a RST
		_ = conn.Close()
	}
	deltas := func(w http.ResponseWriter, n int) {
		wi.startStream(w)
		wi.StreamStart(w, full.InputTokens)
		for _, p := range pieces[:n] {
			wi.Delta(w, p)
		}
	}
	message := "could not continue " + Prompt
	tests := []struct {
		name   string
		stream bool
		write  func(w http.ResponseWriter)
		class  job.ErrorClass // "": any the provider gives its error event
		usage  model.Usage
	}{
		{"dropped before the headers", false, func(http.ResponseWriter) { abort() }, job.Network, worstCase},
		{"reset before the headers", false, reset, job.Network, worstCase},
		{"cut in the middle of the body", false, func(w http.ResponseWriter) { halfAnswer(w, wi); abort() }, job.Network, worstCase},
		{"a body that is not JSON", false, func(w http.ResponseWriter) {
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, "<html>hello</html>")
		}, job.ProviderError, worstCase},
		{"stream dropped before the headers", true, func(http.ResponseWriter) { abort() }, job.Network, promptOnly},
		{"stream reset before the headers", true, reset, job.Network, promptOnly},
		{"stream cut after the headers", true, func(w http.ResponseWriter) { wi.startStream(w); abort() }, job.Network, promptOnly},
		{"stream cut after two deltas", true, func(w http.ResponseWriter) { deltas(w, 2); abort() }, job.Network, wi.seen(2)},
		{"stream ended without its end", true, func(w http.ResponseWriter) { deltas(w, 1) }, job.Network, wi.seen(1)},
		{"stream cut after its final counts", true, func(w http.ResponseWriter) {
			deltas(w, 1)
			wi.Counts(w, full)
			abort()
		}, job.Network, full},
		{"an error event after two deltas", true, func(w http.ResponseWriter) {
			deltas(w, 2)
			wi.StreamError(w, message)
		}, "", wi.seen(2)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := serve(t, func(w http.ResponseWriter, _ *http.Request) { tt.write(w) })
			c := srv.call(wi.Client(t, srv.URL, tt.stream, nil), Call{})
			_, progress, err := s.generate(t, context.Background(), c, nil, message, message[:len(message)/2])
			me := modelError(t, err)
			if tt.class != "" && me.Class != tt.class {
				t.Fatalf("class %q (%v), want %q", me.Class, err, tt.class)
			}
			if me.Usage != tt.usage {
				t.Fatalf("billed %+v, want %+v", me.Usage, tt.usage)
			}
			if me.Usage.OutputTokens < int64(last(progress)) {
				t.Fatalf("billed %+v, below the progress reported %v", me.Usage, progress)
			}
			s.once(t, c)
		})
	}
}

// halfAnswer writes the first half of a whole answer after headers that
// promise all of it.
func halfAnswer(w http.ResponseWriter, wi Wire) {
	rec := httptest.NewRecorder()
	wi.Answer(rec, fullText, &full)
	body := rec.Body.Bytes()
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	_, _ = w.Write(body[:len(body)/2])
	w.(http.Flusher).Flush()
}

// A compatible server or proxy may drop the counts: the answer stands,
// billed an upper estimate (the prompt ceiling, and the text at two bytes
// a token, at most max_tokens; a stream's deltas, a token each).
func withoutCounts(t *testing.T, s suite, wi Wire) {
	for _, tt := range []struct {
		stream    bool
		maxTokens int
		usage     model.Usage
	}{
		{false, MaxTokens, model.Usage{InputTokens: PromptCeiling, OutputTokens: int64(len(fullText)+1) / 2, Estimated: true}},
		{false, 4, model.Usage{InputTokens: PromptCeiling, OutputTokens: 4, Estimated: true}},
		{true, MaxTokens, wi.seen(int64(len(pieces)))},
	} {
		srv := serve(t, func(w http.ResponseWriter, _ *http.Request) { wi.answer(w, tt.stream, nil) })
		c := srv.call(wi.Client(t, srv.URL, tt.stream, nil), Call{})
		c.Request.MaxTokens = tt.maxTokens
		resp, progress, err := s.generate(t, context.Background(), c, nil)
		if err != nil {
			t.Fatalf("stream=%v: %v", tt.stream, err)
		}
		want := model.Response{Output: fullText, Model: wi.Model, FinishReason: wi.Stop, Usage: tt.usage}
		if resp != want {
			t.Fatalf("stream=%v max_tokens %d: got %+v\nwant %+v", tt.stream, tt.maxTokens, resp, want)
		}
		if last(progress) != int(tt.usage.OutputTokens) {
			t.Fatalf("stream=%v: progress %v, want it to end at %d", tt.stream, progress, tt.usage.OutputTokens)
		}
		s.once(t, c)
	}
}
