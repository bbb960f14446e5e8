package client

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/aijobs/aijobs/pkg/wire"
)

// MaxBodyBytes is the largest create body the API takes (api.MaxBodyBytes,
// docs/payloads.md, "Limits"), written again here because the client links
// no server code; a test holds the two equal. Submit sends a larger
// body's input through an upload.
const MaxBodyBytes = 5 << 20

// Upload stores input (a model input's JSON, as a create's "input" would
// carry it) through POST /uploads and the presigned PUT it answers, and
// answers the upload's id for a create's InputUpload (docs/payloads.md,
// "Uploads"). The link works 15 minutes: name the id in a create soon.
func (c *Client) Upload(ctx context.Context, input []byte) (string, error) {
	body, err := json.Marshal(wire.UploadRequest{Size: int64(len(input)), ContentType: "application/json"})
	if err != nil {
		return "", fmt.Errorf("aijobs API: encode the upload request: %w", err)
	}
	a, err := c.call(ctx, request{method: http.MethodPost, path: "/uploads", body: body}, http.StatusCreated)
	if err != nil {
		return "", err
	}
	var u wire.Upload
	if err := json.Unmarshal(a.body, &u); err != nil || u.UploadID == "" || u.URL == "" {
		return "", fmt.Errorf("aijobs API: decode the upload (status %d): not an upload link", a.status)
	}
	for try := 1; ; try++ {
		retry, err := c.putOnce(ctx, u, input)
		if err == nil {
			return u.UploadID, nil
		}
		if !retry || try > c.maxRetries {
			return "", err
		}
		if serr := c.sleep(ctx, c.backoff(try)); serr != nil {
			return "", fmt.Errorf("aijobs API: upload %s: %w", u.UploadID, serr)
		}
	}
}

// putOnce sends body to u's link with exactly the headers the link was
// signed with (no credentials: the signature is in the URL, and S3
// refuses a request whose signed headers differ), and whether another
// try may succeed. Host and Content-Length are not headers Go sends from
// the map: they are checked against the request's own.
func (c *Client) putOnce(ctx context.Context, u wire.Upload, body []byte) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, c.attemptTimeout)
	defer cancel()
	method := u.Method
	if method == "" {
		method = http.MethodPut
	}
	req, err := http.NewRequestWithContext(ctx, method, u.URL, bytes.NewReader(body))
	if err != nil {
		return false, fmt.Errorf("aijobs API: upload %s: the link: %w", u.UploadID, err)
	}
	for k, v := range u.Headers {
		switch strings.ToLower(k) {
		case "host":
			req.Host = v
		case "content-length":
			if v != strconv.Itoa(len(body)) {
				return false, fmt.Errorf("aijobs API: upload %s: the link is signed for %s bytes, not %d", u.UploadID, v, len(body))
			}
		default:
			req.Header.Set(k, v)
		}
	}
	req.ContentLength = int64(len(body))
	resp, err := c.http.Do(req)
	if err != nil {
		return ctx.Err() == nil, fmt.Errorf("aijobs API: upload %s: send: %w", u.UploadID, err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return resp.StatusCode >= 500, fmt.Errorf("aijobs API: upload %s: the store answered status %d", u.UploadID, resp.StatusCode)
	}
	return false, nil
}

// viaUpload is req with its input sent through an upload when the body
// would pass MaxBodyBytes, encoded; a body within it is encoded as is.
func (c *Client) viaUpload(ctx context.Context, req CreateBody) ([]byte, error) {
	body, err := json.Marshal(req)
	if err != nil {
		return nil, fmt.Errorf("aijobs API: encode the create request: %w", err)
	}
	if len(body) <= MaxBodyBytes || len(req.Input) == 0 {
		return body, nil
	}
	id, err := c.Upload(ctx, req.Input)
	if err != nil {
		return nil, err
	}
	req.Input, req.InputUpload = nil, id
	if body, err = json.Marshal(req); err != nil {
		return nil, fmt.Errorf("aijobs API: encode the create request: %w", err)
	}
	return body, nil
}
