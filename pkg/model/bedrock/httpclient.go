package bedrock

import (
	"io"
	"net/http"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"

	"github.com/aijobs/aijobs/pkg/model"
)

// httpClient wraps the HTTP client the SDK would use so that one Generate
// stays one request on one live connection: redirects are not followed and
// the request body cannot break the response stream (see guardedBody).
func httpClient(c aws.HTTPClient) aws.HTTPClient {
	return guardedBody{withoutRedirects(c)}
}

// withoutRedirects returns an HTTP client that never follows a redirect
// (model.NoRedirects). The SDK's default buildable client becomes a plain
// client on the same transport; a client of another kind is the caller's
// to configure.
func withoutRedirects(c aws.HTTPClient) aws.HTTPClient {
	switch hc := c.(type) {
	case nil:
		return model.NoRedirects(&http.Client{Transport: awshttp.NewBuildableClient().GetTransport()})
	case *awshttp.BuildableClient:
		return model.NoRedirects(&http.Client{Transport: hc.GetTransport(), Timeout: hc.GetTimeout()})
	case *http.Client:
		return model.NoRedirects(hc)
	}
	return c
}

// guardedBody hides the request body's WriteTo method from net/http.
//
// The SDK (smithy-go v1.28.9) closes the request body as soon as the
// response headers arrive, and its closed body answers WriteTo with
// io.EOF where Read answers a clean end. net/http's last look at a body
// ("nothing beyond Content-Length?") goes through WriteTo, after the bytes
// are on the wire; when the server answers first, as a streaming server
// may, that look runs on the closed body, the EOF is taken for a failed
// write, and the connection is closed under the response still being
// read: a whole stream lost as a network error, and a second billed call
// when it is retried. Through Read, the look sees the clean end.
type guardedBody struct{ inner aws.HTTPClient }

// readOnly is a request body without WriteTo.
type readOnly struct{ io.ReadCloser }

// Do sends r with its body guarded.
func (g guardedBody) Do(r *http.Request) (*http.Response, error) {
	if r.Body != nil && r.Body != http.NoBody {
		r.Body = readOnly{r.Body}
	}
	return g.inner.Do(r)
}
