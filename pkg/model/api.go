package model

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"

	"github.com/aijobs/aijobs/pkg/job"
)

// API is one provider's HTTP API as its client calls it: every request
// is built, and every failure to build one classified, the same way on
// every endpoint (a call, a batch's, a background generation's).
type API struct {
	// Provider begins every error's detail ("openai").
	Provider string
	// Header is what every request carries: the key, a version.
	Header http.Header
}

// Encode is v as a request's JSON body. A value that does not encode is
// a bug of ours, not the job's: Internal.
func (a API) Encode(v any) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, &Error{Class: job.Internal, Detail: a.Provider + ": encode request", Err: fmt.Errorf("%s: encode request: %w", a.Provider, err)}
	}
	return b, nil
}

// Request is a request to u carrying a's headers and, with a body, the
// JSON content type (set another after it for another body). A URL that
// does not parse is the configured base URL's fault: InvalidRequest.
func (a API) Request(ctx context.Context, method, u string, body io.Reader) (*http.Request, error) {
	hr, err := http.NewRequestWithContext(ctx, method, u, body)
	if err != nil {
		return nil, &Error{Class: job.InvalidRequest, Detail: a.Provider + ": bad base URL", Err: fmt.Errorf("%s: build request: %w", a.Provider, err)}
	}
	for k, v := range a.Header {
		hr.Header[k] = append([]string(nil), v...)
	}
	if body != nil {
		hr.Header.Set("Content-Type", "application/json")
	}
	return hr, nil
}

// Post is a generation's request: v as a POST to u, asking for an event
// stream when stream, under a context (the request's) that traces
// whether it was sent, which decides what a lost answer is billed.
func (a API) Post(ctx context.Context, u string, v any, stream bool) (*http.Request, *Sent, error) {
	body, err := a.Encode(v)
	if err != nil {
		return nil, nil, err
	}
	ctx, sent := TraceSent(ctx)
	hr, err := a.Request(ctx, http.MethodPost, u, bytes.NewReader(body))
	if err != nil {
		return nil, nil, err
	}
	if stream {
		hr.Header.Set("Accept", "text/event-stream")
	}
	return hr, sent, nil
}

// ErrorBody is an answer's error body, at most 64 KiB of it: enough for
// any provider's error, and a bound on what a broken or hostile server
// can make a worker hold.
func ErrorBody(r io.Reader) []byte {
	b, _ := io.ReadAll(io.LimitReader(r, 64<<10))
	return b
}
