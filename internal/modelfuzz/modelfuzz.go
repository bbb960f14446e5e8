// Package modelfuzz holds what the providers' fuzz targets share: an
// in-memory HTTP answer carrying the fuzzer's bytes, and the properties
// every provider's answer to them must have. It exists so the three stream
// parsers (pkg/model/openai, anthropic, bedrock) are held to one standard
// without a network in the loop.
package modelfuzz

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/aijobs/aijobs/pkg/job"
	"github.com/aijobs/aijobs/pkg/model"
)

// Key and Prompt are the secret and the input a provider's error must
// never repeat.
const (
	Key    = "sk-FUZZ-secret-key-never-shown"
	Prompt = "FUZZ-PROMPT tell me a story"
)

// Answer is an HTTP client whose every request gets status 200 with
// ContentType and Body, read from memory.
type Answer struct {
	ContentType string
	Body        []byte
}

// Do answers r.
func (a Answer) Do(r *http.Request) (*http.Response, error) {
	return &http.Response{StatusCode: http.StatusOK, Request: r, ContentLength: int64(len(a.Body)),
		Header: http.Header{"Content-Type": {a.ContentType}}, Body: io.NopCloser(bytes.NewReader(a.Body))}, nil
}

// Request is a generation of Prompt whose progress must never go back:
// the worker writes it to the record, and a poller would see a job undo
// its own work.
func Request(t testing.TB) model.Request {
	last := 0
	return model.Request{JobID: "job-1", MaxTokens: 100, Messages: []job.Message{{Role: "user", Content: Prompt}},
		Progress: func(n int) {
			if n < last {
				t.Fatalf("progress went back from %d to %d", last, n)
			}
			last = n
		}}
}

// Check holds a provider's answer to arbitrary bytes to what the worker
// relies on: an error is a *model.Error of a valid class that Classify
// reads back with its usage, and neither its detail (at most 100 bytes,
// it reaches the job record) nor its text holds the key or the prompt.
func Check(t testing.TB, err error) {
	t.Helper()
	if err == nil {
		return
	}
	var me *model.Error
	if !errors.As(err, &me) {
		t.Fatalf("error %v (%T) is not a *model.Error", err, err)
	}
	if !me.Class.Valid() {
		t.Fatalf("error %v has class %q", err, me.Class)
	}
	if class, usage := model.Classify(err); class != me.Class || usage != me.Usage {
		t.Fatalf("Classify = %q %+v, want %q %+v", class, usage, me.Class, me.Usage)
	}
	for _, secret := range []string{Key, Prompt} {
		if strings.Contains(me.Detail, secret) || strings.Contains(err.Error(), secret) {
			t.Fatalf("error leaks %q: detail %q, error %q", secret, me.Detail, err.Error())
		}
	}
	if len(me.Detail) > 100 {
		t.Fatalf("detail is %d bytes, want at most 100: %q", len(me.Detail), me.Detail)
	}
}
