package openai

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/aijobs/aijobs/pkg/job"
	"github.com/aijobs/aijobs/pkg/model"
	apiwire "github.com/aijobs/aijobs/pkg/wire"
)

// The limits of one POST /v1/embeddings, from OpenAI's API reference
// (platform.openai.com/docs/api-reference/embeddings/create, `input`):
// "any array must be 2048 dimensions or less" and "all embedding models
// enforce a maximum of 300,000 tokens summed across all inputs in a
// single request" (docs/embeddings.md, "OpenAI").
const (
	maxEmbeddingInputs = 2048
	maxEmbeddingTokens = 300_000
)

// embeddingRequest is POST /embeddings' body. encoding_format base64
// answers each vector as the base64 of its little-endian float32s, a
// quarter the size of the float array and the answer's own format
// (apiwire.EmbeddingLine), so it passes through undecoded but checked.
type embeddingRequest struct {
	Model          string   `json:"model"`
	Input          []string `json:"input"`
	EncodingFormat string   `json:"encoding_format"`
	Dimensions     int      `json:"dimensions,omitempty"`
}

type embeddingResponse struct {
	Model string `json:"model"`
	Data  []struct {
		Index     int    `json:"index"`
		Embedding string `json:"embedding"`
	} `json:"data"`
	Usage *usage `json:"usage"`
}

// embedCalls splits texts into the calls one attempt makes, in order:
// each of at most maxEmbeddingInputs texts whose ceiling
// (job.TextsCeiling, an over-estimate) sums to at most
// maxEmbeddingTokens, a text alone over it in a call of its own (the
// provider then refuses it, as it would anyway).
func embedCalls(texts []string) [][]string {
	var calls [][]string
	start, tokens := 0, int64(0)
	for i, t := range texts {
		n := job.TextsCeiling([]string{t})
		if i > start && (i-start == maxEmbeddingInputs || tokens+n > maxEmbeddingTokens) {
			calls = append(calls, texts[start:i])
			start, tokens = i, 0
		}
		tokens += n
	}
	if start < len(texts) {
		calls = append(calls, texts[start:])
	}
	return calls
}

// embed answers r's texts' vectors through as many calls as embedCalls
// makes, their usage summed. A call that fails ends the attempt with its
// error, its usage the sum of every call made, so what was paid stays on
// the record.
func (c *Client) embed(ctx context.Context, r model.Request) (model.Response, error) {
	if r.Model == "" {
		r.Model = c.cfg.Model
	}
	var vectors []string
	var used model.Usage
	out := model.Response{Model: r.Model}
	for _, texts := range embedCalls(r.Texts) {
		call := r
		call.Texts = texts
		resp, vs, err := c.embedOnce(ctx, call)
		if err != nil {
			var me *model.Error
			if !errors.As(err, &me) {
				me = &model.Error{Class: job.Internal, Detail: "openai: embeddings", Err: err}
			}
			me.Usage = addUsage(used, me.Usage)
			return model.Response{}, me
		}
		used = addUsage(used, resp.Usage)
		vectors = append(vectors, vs...)
		out.Model, out.Left = resp.Model, resp.Left
	}
	out.Output, out.Usage = apiwire.EncodeEmbeddings(vectors), used
	return out, nil
}

func addUsage(a, b model.Usage) model.Usage {
	return model.Usage{InputTokens: a.InputTokens + b.InputTokens, Estimated: a.Estimated || b.Estimated}
}

// embedOnce is one POST /embeddings of r's texts: the vectors in r's
// order, and the response's usage and rate-limit headers.
func (c *Client) embedOnce(ctx context.Context, r model.Request) (model.Response, []string, error) {
	req := embeddingRequest{Model: r.Model, Input: r.Texts, EncodingFormat: "base64", Dimensions: r.Dimensions}
	hr, sent, err := c.api().Post(ctx, c.base+"/embeddings", req, false)
	if err != nil {
		return model.Response{}, nil, err
	}
	ctx = hr.Context()
	resp, err := c.cfg.HTTPClient.Do(hr)
	if err != nil {
		return model.Response{}, nil, transportError(ctx, err, sent.Unanswered(r, false))
	}
	defer resp.Body.Close()
	at := time.Now()
	out, vs, err := readEmbeddings(ctx, resp, r)
	out, err = model.Heard(out, err, resp.Header, at)
	return out, vs, err
}

// readEmbeddings reads an answer to a POST /embeddings of r, whatever its
// status. An answer whose vectors do not match the texts (a count, an
// index, a length) is a provider_error, billed as it reported.
func readEmbeddings(ctx context.Context, resp *http.Response, r model.Request) (model.Response, []string, error) {
	if resp.StatusCode/100 != 2 {
		return model.Response{}, nil, statusError(resp.StatusCode, model.ErrorBody(resp.Body), r.Lane)
	}
	var er embeddingResponse
	if err := json.NewDecoder(resp.Body).Decode(&er); err != nil {
		if ctx.Err() != nil || model.IsTransport(err) {
			return model.Response{}, nil, transportError(ctx, err, model.Unanswered(r, false))
		}
		return model.Response{}, nil, &model.Error{Class: job.ProviderError, Detail: "openai: unparseable embeddings",
			Usage: model.Unanswered(r, false), Err: fmt.Errorf("openai: decode embeddings: %w", err)}
	}
	u := model.Unreported(r, "")
	if er.Usage != nil {
		u = model.Usage{InputTokens: er.Usage.PromptTokens}
	}
	vs, err := inOrder(er, len(r.Texts), r.Dimensions)
	if err != nil {
		return model.Response{}, nil, &model.Error{Class: job.ProviderError, Detail: "openai: embeddings do not match the texts", Usage: u, Err: err}
	}
	return model.Response{Model: cmp.Or(er.Model, r.Model), Usage: u}, vs, nil
}

// inOrder is er's vectors by index, checked: n of them, each index once,
// each whole float32s and all of one length (dims when it is not 0).
func inOrder(er embeddingResponse, n, dims int) ([]string, error) {
	if len(er.Data) != n {
		return nil, fmt.Errorf("openai: %d embeddings for %d texts", len(er.Data), n)
	}
	vs := make([]string, n)
	length := dims
	for _, d := range er.Data {
		if d.Index < 0 || d.Index >= n || vs[d.Index] != "" {
			return nil, fmt.Errorf("openai: embedding index %d out of place", d.Index)
		}
		v, err := apiwire.DecodeVector(d.Embedding)
		if err != nil {
			return nil, fmt.Errorf("openai: embedding %d: %w", d.Index, err)
		}
		if length == 0 {
			length = len(v)
		}
		if len(v) != length || length == 0 {
			return nil, fmt.Errorf("openai: embedding %d has %d dimensions, want %d", d.Index, len(v), length)
		}
		vs[d.Index] = d.Embedding
	}
	return vs, nil
}
