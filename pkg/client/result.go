package client

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
)

// maxLinkedResult bounds a linked answer the client reads into memory,
// whatever size the view claims: a model's longest answers are a few MB.
const maxLinkedResult = 256 << 20

// GetState is Get without fetching a linked answer: the view keeps its
// result_url and a null Result, for a caller that polls only the state
// (or fetches the answer itself, or not at all).
func (c *Client) GetState(ctx context.Context, id, etag string) (Snapshot, error) {
	return c.get(ctx, id, etag)
}

// Get reads a job (GET /jobs/{id}). With a non-empty etag it asks
// If-None-Match, and an unchanged job answers NotModified with no view (a
// 304 costs no body). An unknown id and another tenant's job are both an
// *Error with Code not_found. An answer too large to be inline comes as a
// link (docs/payloads.md, "Answers"): Get fetches it, checks its size and
// SHA-256 against the view's, and fills View.Result as if it had been
// inline; GetState skips that.
func (c *Client) Get(ctx context.Context, id, etag string) (Snapshot, error) {
	s, err := c.get(ctx, id, etag)
	if err != nil || !s.View.Linked() {
		return s, err
	}
	if s.View.Result, err = c.fetchResult(ctx, s.View); err != nil {
		return Snapshot{}, err
	}
	return s, nil
}

// fetchResult reads v's linked answer: a plain GET of its presigned URL
// (no credentials: the signature is in the URL, and an Authorization
// header would make S3 refuse it), retried as the API's calls are after a
// network error or a 5xx, and checked against the size and digest the
// record keeps, so a cut or changed body is an error, never an answer.
func (c *Client) fetchResult(ctx context.Context, v View) ([]byte, error) {
	if v.ResultURL == "" {
		return nil, fmt.Errorf("aijobs API: job %s: the answer has no link", v.ID)
	}
	if v.ResultBytes > maxLinkedResult {
		return nil, fmt.Errorf("aijobs API: job %s: the answer is %d bytes, over the %d the client reads", v.ID, v.ResultBytes, maxLinkedResult)
	}
	var err error
	for try := 1; try <= c.maxRetries+1; try++ {
		var body []byte
		var retry bool
		if body, retry, err = c.fetchOnce(ctx, v); err == nil {
			return body, nil
		}
		if !retry || try > c.maxRetries {
			break
		}
		if serr := c.sleep(ctx, c.backoff(try)); serr != nil {
			return nil, fmt.Errorf("aijobs API: job %s: fetch the answer: %w", v.ID, serr)
		}
	}
	return nil, err
}

// fetchOnce is one try of fetchResult, and whether another may succeed.
func (c *Client) fetchOnce(ctx context.Context, v View) ([]byte, bool, error) {
	ctx, cancel := context.WithTimeout(ctx, c.attemptTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, v.ResultURL, nil)
	if err != nil {
		return nil, false, fmt.Errorf("aijobs API: job %s: the answer's link: %w", v.ID, err)
	}
	req.Header.Set("User-Agent", c.userAgent)
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, ctx.Err() == nil, fmt.Errorf("aijobs API: job %s: fetch the answer: %w", v.ID, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		// A 403 is most often a link that expired: a new Get signs a
		// fresh one.
		return nil, resp.StatusCode >= 500, fmt.Errorf("aijobs API: job %s: fetch the answer: status %d (a link expires %s; Get the job again for a fresh one)",
			v.ID, resp.StatusCode, v.ResultExpiresAt)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, v.ResultBytes+1))
	if err != nil {
		return nil, true, fmt.Errorf("aijobs API: job %s: read the answer: %w", v.ID, err)
	}
	sum := sha256.Sum256(body)
	if int64(len(body)) != v.ResultBytes || "sha256:"+hex.EncodeToString(sum[:]) != v.ResultHash {
		return nil, true, fmt.Errorf("aijobs API: job %s: the answer read is not the one stored (%d bytes, want %d, or another digest)", v.ID, len(body), v.ResultBytes)
	}
	return body, false, nil
}
