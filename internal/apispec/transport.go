package apispec

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
)

// Reporter is where a transport reports a broken exchange: a
// testing.TB, so the test fails.
type Reporter interface {
	Errorf(format string, args ...any)
}

// Transport wraps base (http.DefaultTransport when nil) so that every
// exchange through it is checked against the default document, and each
// one that breaks it fails the test.
func Transport(t Reporter, base http.RoundTripper) http.RoundTripper {
	if base == nil {
		base = http.DefaultTransport
	}
	return &transport{t: t, base: base}
}

type transport struct {
	t    Reporter
	base http.RoundTripper
}

func (tr *transport) RoundTrip(req *http.Request) (*http.Response, error) {
	var body []byte
	if req.Body != nil && req.Body != http.NoBody {
		b, err := io.ReadAll(req.Body)
		_ = req.Body.Close()
		if err != nil {
			return nil, fmt.Errorf("read the request body to check it: %w", err)
		}
		body = b
		req = req.Clone(req.Context())
		req.Body = io.NopCloser(bytes.NewReader(b))
		req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil }
	}
	resp, err := tr.base.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	got, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if err != nil {
		return nil, fmt.Errorf("read the response body to check it: %w", err)
	}
	resp.Body = io.NopCloser(bytes.NewReader(got))
	v, err := Default()
	if err != nil {
		tr.t.Errorf("%v", err)
		return resp, nil
	}
	x := Exchange{Request: req, Body: body, Status: resp.StatusCode, Header: resp.Header, ResponseBody: got}
	if err := v.Check(x); err != nil {
		tr.t.Errorf("the exchange breaks docs/openapi.yaml: %v", err)
	}
	return resp, nil
}
