package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/url"

	"github.com/aijobs/aijobs/pkg/job"
	"github.com/aijobs/aijobs/pkg/model"
)

// The batch lane's wire (docs/lanes.md, "The batch lane"): a batch
// is a JSONL file of chat-completions requests (or embeddings requests:
// batchembed.go) uploaded with purpose "batch", one batch made from it,
// polled until it ends, and its output and error files read line by
// line. A chat line's custom_id is its job's id.
const (
	batchEndpoint = "/v1/chat/completions"
	batchWindow   = "24h"
	// batchKey is the metadata key holding the collector's id for a
	// batch. OpenAI deduplicates no create, so a collector that died
	// after creating one finds it under this key instead of making a
	// second (and paying twice).
	batchKey = "aijobs_batch"
	// findPages bounds the newest-first listing that looks for a batch
	// under its key: a dead collector's batch is carried on by the next
	// run, a minute later, so it is among the newest.
	findPages = 5
)

// batchObject is the part of OpenAI's batch object the lane reads.
type batchObject struct {
	ID           string            `json:"id"`
	Status       string            `json:"status"`
	OutputFileID string            `json:"output_file_id"`
	ErrorFileID  string            `json:"error_file_id"`
	Metadata     map[string]string `json:"metadata"`
}

// ended reports whether the batch will change no more: every request was
// answered, failed, expired or cancelled (or the file failed validation).
func (b batchObject) ended() bool {
	switch b.Status {
	case "completed", "failed", "expired", "cancelled":
		return true
	}
	return false
}

// batchLine is one request of a batch's input file.
type batchLine struct {
	CustomID string `json:"custom_id"`
	Method   string `json:"method"`
	URL      string `json:"url"`
	Body     any    `json:"body"` // a chatRequest, or an embeddingRequest
}

// resultLine is one line of a batch's output or error file: the server's
// answer to the request custom_id, or the reason it made none.
type resultLine struct {
	CustomID string `json:"custom_id"`
	Response *struct {
		StatusCode int             `json:"status_code"`
		Body       json.RawMessage `json:"body"`
	} `json:"response"`
	Error *struct {
		Code string `json:"code"`
	} `json:"error"`
}

// SubmitBatch makes one batch of reqs under key, or finds the one a
// collector that died after making it left (model.Batcher). A file whose
// batch was never made is left to expire (OpenAI expires batch files
// after 30 days).
func (c *Client) SubmitBatch(ctx context.Context, key string, reqs []model.Request) (string, error) {
	endpoint, err := endpointOf(reqs)
	if err != nil {
		return "", err
	}
	if b, ok, err := c.findBatch(ctx, key); err != nil || ok {
		return b.ID, err
	}
	file, err := c.uploadBatch(ctx, key, reqs)
	if err != nil {
		return "", err
	}
	create, err := json.Marshal(map[string]any{"input_file_id": file, "endpoint": endpoint,
		"completion_window": batchWindow, "metadata": map[string]string{batchKey: key}})
	if err != nil {
		return "", fmt.Errorf("openai: encode batch: %w", err)
	}
	var b batchObject
	if err := c.batchCall(ctx, wire{http.MethodPost, c.base + "/batches", "application/json", bytes.NewReader(create)}, &b); err != nil {
		return "", err
	}
	return b.ID, nil
}

// findBatch is the batch made under key, among the newest.
func (c *Client) findBatch(ctx context.Context, key string) (batchObject, bool, error) {
	after := ""
	for range findPages {
		q := url.Values{"limit": {"100"}}
		if after != "" {
			q.Set("after", after)
		}
		var page struct {
			Data    []batchObject `json:"data"`
			HasMore bool          `json:"has_more"`
			LastID  string        `json:"last_id"`
		}
		if err := c.batchCall(ctx, wire{method: http.MethodGet, url: c.base + "/batches?" + q.Encode()}, &page); err != nil {
			return batchObject{}, false, err
		}
		for _, b := range page.Data {
			if b.Metadata[batchKey] == key {
				return b, true, nil
			}
		}
		if !page.HasMore || len(page.Data) == 0 {
			break
		}
		after = page.LastID
		if after == "" {
			after = page.Data[len(page.Data)-1].ID
		}
	}
	return batchObject{}, false, nil
}

// uploadBatch uploads reqs as a batch input file and answers its id.
func (c *Client) uploadBatch(ctx context.Context, key string, reqs []model.Request) (string, error) {
	var lines bytes.Buffer
	enc := json.NewEncoder(&lines)
	for _, r := range reqs {
		if err := unsendable(r.Options); err != nil {
			return "", err
		}
		ls := []batchLine{{CustomID: r.JobID, Method: http.MethodPost, URL: batchEndpoint, Body: c.chat(r)}}
		if r.Texts != nil {
			ls = c.embeddingLines(r)
		}
		for _, l := range ls {
			if err := enc.Encode(l); err != nil {
				return "", fmt.Errorf("openai: encode batch line: %w", err)
			}
		}
	}
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	if err := mw.WriteField("purpose", "batch"); err != nil {
		return "", err
	}
	fw, err := mw.CreateFormFile("file", key+".jsonl")
	if err != nil {
		return "", err
	}
	if _, err := fw.Write(lines.Bytes()); err != nil {
		return "", err
	}
	if err := mw.Close(); err != nil {
		return "", err
	}
	var f struct {
		ID string `json:"id"`
	}
	if err := c.batchCall(ctx, wire{http.MethodPost, c.base + "/files", mw.FormDataContentType(), &body}, &f); err != nil {
		return "", err
	}
	return f.ID, nil
}

// BatchEnded reports whether batch id has ended.
func (c *Client) BatchEnded(ctx context.Context, id string) (bool, error) {
	b, err := c.batch(ctx, id)
	return b.ended(), err
}

func (c *Client) batch(ctx context.Context, id string) (batchObject, error) {
	var b batchObject
	err := c.batchCall(ctx, wire{method: http.MethodGet, url: c.base + "/batches/" + url.PathEscape(id)}, &b)
	return b, err
}

// BatchResults reads the ended batch id's output file, then its error
// file. A request neither names (a batch that failed validation) has no
// result: the collector hands its job back. An embedding job's lines are
// joined, and its one result given once both files were read (joiner).
func (c *Client) BatchResults(ctx context.Context, id string, each func(string, model.Response, error) error) error {
	b, err := c.batch(ctx, id)
	if err != nil {
		return err
	}
	if !b.ended() {
		return fmt.Errorf("openai: batch %s has not ended (%s)", id, b.Status)
	}
	var joins joiner
	for _, file := range []string{b.OutputFileID, b.ErrorFileID} {
		if file == "" {
			continue
		}
		if err := c.readLines(ctx, file, func(l resultLine) error {
			if ch, ok := parseChunk(l.CustomID); ok {
				joins.add(ch, l)
				return nil
			}
			resp, err := result(l)
			return each(l.CustomID, resp, err)
		}); err != nil {
			return err
		}
	}
	return joins.each(each)
}

// readLines calls each with every line of file.
func (c *Client) readLines(ctx context.Context, file string, each func(resultLine) error) error {
	resp, err := c.send(ctx, wire{method: http.MethodGet, url: c.base + "/files/" + url.PathEscape(file) + "/content"})
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	return model.EachResult(resp.Body, "openai: read batch file "+file, func(l resultLine) error {
		if l.CustomID == "" {
			return nil
		}
		return each(l)
	})
}

// result is line l's answer, or its error (billed nothing: a batch bills
// only answers).
func result(l resultLine) (model.Response, error) {
	if err := lineError(l); err != nil {
		return model.Response{}, err
	}
	var cr chatResponse
	if err := json.Unmarshal(l.Response.Body, &cr); err != nil || len(cr.Choices) == 0 {
		u := model.Usage{Estimated: true} // billed an answer: what it counts is not known
		if err == nil && cr.Usage != nil {
			u = cr.Usage.billed() // the answer says what it billed
		}
		return model.Response{}, &model.Error{Class: job.ProviderError, Detail: "openai: batch answer without choices", Usage: u}
	}
	content := cr.Choices[0].Message.Content
	u := model.BatchUnreported(content)
	if cr.Usage != nil {
		u = cr.Usage.billed()
	}
	// Served stays unsaid: a batch is billed at batch rates (OpenAI's
	// Batch API guide), so a tier a line's body names does not reprice
	// it from the batch lane it was enlisted in.
	return finish(content, cr.Model, cr.Choices[0].FinishReason, u)
}

// lineError is the error of line l when it holds no 2xx answer, its
// class as its code or status says (billed nothing: a batch bills only
// answers), nil when it holds one.
func lineError(l resultLine) error {
	switch {
	case l.Error != nil:
		class := job.ProviderError
		if l.Error.Code == "batch_expired" || l.Error.Code == "batch_cancelled" {
			class = job.CapacityUnavailable // not run in time: no fault of the job's
		}
		return &model.Error{Class: class, Detail: "openai: batch item " + short(l.Error.Code)}
	case l.Response == nil:
		return &model.Error{Class: job.ProviderError, Detail: "openai: batch item without a response"}
	case l.Response.StatusCode/100 != 2:
		return statusError(l.Response.StatusCode, l.Response.Body, job.Batch)
	}
	return nil
}

// short is code when it is short enough to be a code, not a message.
func short(code string) string {
	if len(code) > 64 {
		return "error"
	}
	return code
}

// wire is one request of the batch wire.
type wire struct {
	method, url, contentType string
	body                     io.Reader
}

// batchCall sends w and decodes its JSON answer into out.
func (c *Client) batchCall(ctx context.Context, w wire, out any) error {
	resp, err := c.send(ctx, w)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		return &model.Error{Class: job.ProviderError, Detail: "openai: unparseable batch answer", Err: fmt.Errorf("openai: decode: %w", err)}
	}
	return nil
}

// send sends one request of the batch wire with the key; an answer that
// is not a 2xx is its classified error. Nothing on this wire is billed:
// only the batch's answers are.
func (c *Client) send(ctx context.Context, w wire) (*http.Response, error) {
	hr, err := c.api().Request(ctx, w.method, w.url, w.body)
	if err != nil {
		return nil, err
	}
	if w.contentType != "" {
		hr.Header.Set("Content-Type", w.contentType)
	}
	resp, err := c.cfg.HTTPClient.Do(hr)
	if err != nil {
		return nil, transportError(ctx, err, model.Usage{})
	}
	if resp.StatusCode/100 != 2 {
		b := model.ErrorBody(resp.Body)
		_ = resp.Body.Close()
		return nil, statusError(resp.StatusCode, b, job.Batch)
	}
	return resp, nil
}
