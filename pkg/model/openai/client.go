// Package openai is a model provider for OpenAI-compatible chat-completions
// servers: OpenAI itself, vLLM, Ollama, LiteLLM proxies. It makes exactly
// one HTTP request per Generate (no retries of its own: retries happen only
// through the claim path, where they are counted and paid for), streams when
// asked so progress is known while tokens arrive, and always asks for usage,
// so every call's cost is known.
package openai

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/aijobs/aijobs/pkg/job"
	"github.com/aijobs/aijobs/pkg/model"
)

// Doer sends HTTP requests; the SDK's buildable client or *http.Client.
type Doer interface {
	Do(*http.Request) (*http.Response, error)
}

// Config describes one server and model.
type Config struct {
	// BaseURL is the API root, e.g. https://api.openai.com/v1.
	BaseURL string
	// APIKey is sent as a bearer token when set; it is never logged or put
	// into an error.
	APIKey string
	// Model is used when a request names none.
	Model  string
	Stream bool
	// Background speaks the Responses API in background mode instead of
	// chat completions (responses.go): the server keeps each generation
	// by id, so a call can resume one. Stream is then ignored.
	Background bool
	// PollEvery is how often a background generation is polled; zero
	// means DefaultPollEvery.
	PollEvery time.Duration
	// MaxTokensField names the chat body's output cap: "max_tokens" for
	// a compatible server that knows only the old name; anything else
	// sends "max_completion_tokens", the only one OpenAI's current models
	// (gpt-5, the o-series) accept: they refuse max_tokens with a 400
	// unsupported_parameter (docs/providers.md, "OpenAI"). The Responses
	// API has its own, max_output_tokens, whatever this says.
	MaxTokensField string
	// HTTPClient sends the requests; nil means model.NoRedirects(nil), and
	// a client given here should be made by it too. The request's context
	// bounds each call: the client has no timeout. It must run on
	// net/http's transport, which reports when a request was written
	// (model.TraceSent): with any other, a call sent whose answer was lost
	// is billed nothing.
	HTTPClient Doer
}

// Client is the provider.
type Client struct {
	cfg       Config
	base      string // the API root, for the batch lane's files and batches
	url       string
	responses string // the Responses API's root, for Background
}

// New checks cfg and returns a client.
func New(cfg Config) (*Client, error) {
	if cfg.BaseURL == "" {
		return nil, errors.New("openai: base URL is required")
	}
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = model.NoRedirects(nil)
	}
	base := strings.TrimRight(cfg.BaseURL, "/")
	return &Client{cfg: cfg, base: base, url: base + "/chat/completions", responses: base + "/responses"}, nil
}

type chatMessage struct {
	Role    string `json:"role"`
	Content string `json:"content"`
	// parts, when set, are sent as the content (parts.go).
	parts []any
}

type chatRequest struct {
	Model    string        `json:"model"`
	Messages []chatMessage `json:"messages"`
	// MaxCompletionTokens is the output cap every OpenAI model takes;
	// MaxTokens is sent instead only to a server configured for the old
	// name (Config.MaxTokensField). At most one is set.
	MaxCompletionTokens int      `json:"max_completion_tokens,omitempty"`
	MaxTokens           int      `json:"max_tokens,omitempty"`
	Temperature         *float64 `json:"temperature,omitempty"`
	// TopP, Stop, Seed and ReasoningEffort are job.Options as chat
	// completions name them (platform.openai.com/docs/api-reference/chat/create;
	// docs/providers.md, "Sampling and reasoning options").
	TopP            *float64       `json:"top_p,omitempty"`
	Stop            []string       `json:"stop,omitempty"`
	Seed            *int64         `json:"seed,omitempty"`
	ReasoningEffort string         `json:"reasoning_effort,omitempty"`
	Stream          bool           `json:"stream,omitempty"`
	StreamOptions   *streamOptions `json:"stream_options,omitempty"`
	// ServiceTier is last and omitted when empty, so a standard call's
	// body stays what it was before lanes.
	ServiceTier string `json:"service_tier,omitempty"`

	// ResponseFormat is the job's response_format (schema.go).
	ResponseFormat *job.ResponseFormat `json:"response_format,omitempty"`
}

type streamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

// usage is a chat completion's counts. prompt_tokens already holds the
// cached tokens and completion_tokens the reasoning ones: the details
// say which part of each they are, as model.Usage keeps them.
type usage struct {
	PromptTokens        int64 `json:"prompt_tokens"`
	CompletionTokens    int64 `json:"completion_tokens"`
	PromptTokensDetails struct {
		CachedTokens int64 `json:"cached_tokens"`
	} `json:"prompt_tokens_details"`
	CompletionTokensDetails struct {
		ReasoningTokens int64 `json:"reasoning_tokens"`
	} `json:"completion_tokens_details"`
}

// billed is the server's count as billed usage.
func (u usage) billed() model.Usage {
	return model.Usage{InputTokens: u.PromptTokens, OutputTokens: u.CompletionTokens,
		CachedInputTokens: u.PromptTokensDetails.CachedTokens, ReasoningTokens: u.CompletionTokensDetails.ReasoningTokens}
}

type chatResponse struct {
	Model string `json:"model"`
	// ServiceTier is the tier that served the call (served).
	ServiceTier string `json:"service_tier"`
	Choices     []struct {
		Message      chatMessage `json:"message"`
		FinishReason string      `json:"finish_reason"`
	} `json:"choices"`
	Usage *usage `json:"usage"`
}

// Generate makes one chat-completions call, or one background generation
// (Config.Background).
func (c *Client) Generate(ctx context.Context, r model.Request) (model.Response, error) {
	if r.Texts != nil {
		return c.embed(ctx, r)
	}
	if err := unsendable(r.Options); err != nil && r.Resume == "" {
		return model.Response{}, err
	}
	if c.cfg.Background {
		return c.background(ctx, r)
	}
	req := c.chat(r)
	req.Stream, req.ServiceTier = c.cfg.Stream, serviceTier(r.Lane)
	r.Model = req.Model
	if c.cfg.Stream {
		req.StreamOptions = &streamOptions{IncludeUsage: true}
	}
	hr, sent, err := c.api().Post(ctx, c.url, req, c.cfg.Stream)
	if err != nil {
		return model.Response{}, err
	}
	ctx = hr.Context()
	resp, err := c.cfg.HTTPClient.Do(hr)
	if err != nil {
		return model.Response{}, transportError(ctx, err, sent.Unanswered(r, c.cfg.Stream))
	}
	defer resp.Body.Close()
	at := time.Now()
	out, err := c.answer(ctx, resp, r)
	return heard(out, err, resp.Header, at)
}

// chat is r as a chat-completions request, in the standard lane and
// whole (not streamed): a call and a batch's line start from it.
func (c *Client) chat(r model.Request) chatRequest {
	o := r.Options
	req := chatRequest{Model: r.Model, MaxCompletionTokens: r.MaxTokens, Temperature: r.Temperature,
		TopP: o.TopP, Stop: o.Stop, Seed: o.Seed, ResponseFormat: chatFormat(o.ResponseFormat)}
	if o.Reasoning != nil {
		req.ReasoningEffort = o.Reasoning.Effort
	}
	if c.cfg.MaxTokensField == "max_tokens" {
		req.MaxCompletionTokens, req.MaxTokens = 0, r.MaxTokens
	}
	if req.Model == "" {
		req.Model = c.cfg.Model
	}
	for _, m := range r.Messages {
		req.Messages = append(req.Messages, chatMessageOf(m, false))
	}
	return req
}

// unsendable refuses, unsent and unbilled, a reasoning option without an
// effort: a thinking budget alone has no place in OpenAI's bodies. Config
// refuses such a job at create; one accepted when its route was another
// is refused here rather than run without it.
func unsendable(o job.Options) error {
	if o.Reasoning != nil && o.Reasoning.Effort == "" {
		return model.Errorf(job.InvalidRequest, "openai: a reasoning option needs an effort")
	}
	return nil
}

// serviceTier is what a lane asks of the server. Standard (and no lane)
// sends nothing: the project's default tier is the standard lane, and a
// compatible server that knows no service_tier must see no new field.
func serviceTier(l job.Lane) string {
	switch l {
	case job.Flex, job.Priority:
		return string(l)
	}
	return ""
}

// served is the lane a service_tier answer names: "default" is the
// standard tier (priority processing past its ramp limit answers it, and
// bills standard rates); anything else, or nothing, says nothing, and the
// call is priced at the lane it asked for.
func served(tier string) job.Lane {
	switch tier {
	case "default":
		return job.Standard
	case "flex":
		return job.Flex
	case "priority":
		return job.Priority
	}
	return ""
}

// heard is model.Heard, except that a flex capacity refusal asks for no
// pause: its retry-after speaks of the flex pool, not of the key, and
// pausing the key would hold back the faster lane the worker moves to.
func heard(out model.Response, err error, h http.Header, at time.Time) (model.Response, error) {
	out, err = model.Heard(out, err, h, at)
	var me *model.Error
	if errors.As(err, &me) && me.Class == job.CapacityUnavailable {
		me.Pause = 0
	}
	return out, err
}

// api is the API as every request calls it: with the key when there is
// one.
func (c *Client) api() model.API {
	h := http.Header{}
	if c.cfg.APIKey != "" {
		h.Set("Authorization", "Bearer "+c.cfg.APIKey)
	}
	return model.API{Provider: "openai", Header: h}
}

// answer reads what the server answered, whatever its status.
func (c *Client) answer(ctx context.Context, resp *http.Response, r model.Request) (model.Response, error) {
	if resp.StatusCode/100 != 2 {
		return model.Response{}, statusError(resp.StatusCode, model.ErrorBody(resp.Body), r.Lane)
	}
	if c.cfg.Stream {
		return readStream(ctx, resp.Body, r)
	}
	// From here the server answered: whatever became of the body, it
	// generated the answer, and an answer without counts is billed the
	// worst case.
	var cr chatResponse
	if err := json.NewDecoder(resp.Body).Decode(&cr); err != nil {
		if ctx.Err() != nil || model.IsTransport(err) {
			return model.Response{}, transportError(ctx, err, model.Unanswered(r, false))
		}
		return model.Response{}, &model.Error{Class: job.ProviderError, Detail: "openai: unparseable response",
			Usage: model.Unanswered(r, false), Err: fmt.Errorf("openai: decode response: %w", err)}
	}
	if len(cr.Choices) == 0 {
		u := model.Unanswered(r, false)
		if cr.Usage != nil {
			u = cr.Usage.billed()
		}
		return model.Response{}, &model.Error{Class: job.ProviderError, Detail: "openai: no choices", Usage: u,
			Err: errors.New("openai: response has no choices")}
	}
	u := model.Unreported(r, cr.Choices[0].Message.Content)
	if cr.Usage != nil {
		u = cr.Usage.billed()
	}
	if r.Progress != nil {
		r.Progress(int(u.OutputTokens))
	}
	name := cr.Model
	if name == "" {
		name = r.Model
	}
	out, err := finish(cr.Choices[0].Message.Content, name, cr.Choices[0].FinishReason, u)
	out.Served = served(cr.ServiceTier)
	return out, err
}

// finish turns a completed answer into a response, or into a content
// filter error that is still billed.
func finish(output, modelName, reason string, u model.Usage) (model.Response, error) {
	if reason == "content_filter" {
		return model.Response{}, &model.Error{Class: job.ContentFiltered, Detail: "openai: finish_reason content_filter", Usage: u}
	}
	return model.Response{Output: output, Model: modelName, FinishReason: reason, Usage: u}, nil
}
