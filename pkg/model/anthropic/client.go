// Package anthropic is a model provider for Anthropic's Messages API over
// plain HTTP. It makes exactly one HTTP request per Generate (no retries of
// its own: retries happen only through the claim path, where they are
// counted and paid for), streams when asked so progress is known while
// tokens arrive, and reports the usage of every call, failed ones included,
// because a call the server started is a call somebody pays for.
//
// It speaks the wire format directly instead of using the SDK: the provider
// needs one endpoint, and owning the parsing is what lets it bill a stream
// cut short and classify every error without ever keeping a vendor message,
// which may quote the prompt.
package anthropic

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/aijobs/aijobs/pkg/job"
	"github.com/aijobs/aijobs/pkg/model"
)

const (
	// DefaultBaseURL is Anthropic's API root.
	DefaultBaseURL = "https://api.anthropic.com"
	// DefaultVersion is the anthropic-version header the wire format
	// below was written against.
	DefaultVersion = "2023-06-01"
	// DefaultMaxTokens is sent when a request sets no limit: the Messages
	// API requires max_tokens.
	DefaultMaxTokens = 1024
)

// Doer sends HTTP requests; *http.Client is one.
type Doer interface {
	Do(*http.Request) (*http.Response, error)
}

// Config describes one API endpoint and model.
type Config struct {
	// BaseURL is the API root; empty means DefaultBaseURL. Requests go to
	// {BaseURL}/v1/messages.
	BaseURL string
	// APIKey is sent as x-api-key when set (a proxy may add it instead);
	// it is never logged or put into an error.
	APIKey string
	// Version is the anthropic-version header; empty means DefaultVersion.
	Version string
	// Model is used when a request names none.
	Model  string
	Stream bool
	// HTTPClient sends the requests; nil means model.NoRedirects(nil), and
	// a client given here should be made by it too. The request's context
	// bounds each call: the client needs no timeout. It must run on
	// net/http's transport, which reports when a request was written
	// (model.TraceSent): with any other, a call sent whose answer was lost
	// is billed nothing.
	HTTPClient Doer
}

// Client is the provider. It is safe for concurrent use.
type Client struct {
	cfg Config
	url string
}

// New checks cfg, fills its defaults and returns a client.
func New(cfg Config) (*Client, error) {
	if cfg.BaseURL == "" {
		cfg.BaseURL = DefaultBaseURL
	}
	if u, err := url.Parse(cfg.BaseURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, errors.New("anthropic: base URL must be an absolute http(s) URL")
	}
	if cfg.Version == "" {
		cfg.Version = DefaultVersion
	}
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = model.NoRedirects(nil)
	}
	return &Client{cfg: cfg, url: strings.TrimRight(cfg.BaseURL, "/") + "/v1/messages"}, nil
}

type message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
	// blocks, when set, are sent as the content (parts.go).
	blocks []any
}

type messagesRequest struct {
	Model       string    `json:"model"`
	System      string    `json:"system,omitempty"`
	Messages    []message `json:"messages"`
	MaxTokens   int       `json:"max_tokens"`
	Temperature *float64  `json:"temperature,omitempty"`
	// TopP, StopSequences and Thinking are job.Options as the Messages
	// API names them (docs.anthropic.com/en/api/messages; docs/providers.md,
	// "Sampling and reasoning options"): the reasoning option's thinking
	// budget is extended thinking, {"type": "enabled", "budget_tokens": N}.
	TopP          *float64  `json:"top_p,omitempty"`
	StopSequences []string  `json:"stop_sequences,omitempty"`
	Thinking      *thinking `json:"thinking,omitempty"`
	Stream        bool      `json:"stream,omitempty"`

	// Tools and ToolChoice carry the job's response_format (schema.go).
	Tools      []tool      `json:"tools,omitempty"`
	ToolChoice *toolChoice `json:"tool_choice,omitempty"`
}

// thinking is the Messages API's extended thinking configuration.
type thinking struct {
	Type         string `json:"type"`
	BudgetTokens int    `json:"budget_tokens"`
}

// usage is the API's token count. input_tokens leaves out the prompt
// tokens read from the cache and those written to it ("Prompt caching":
// total input = input_tokens + cache_creation_input_tokens +
// cache_read_input_tokens, https://docs.anthropic.com/en/docs/build-with-claude/prompt-caching);
// they were read all the same, and are billed at their own rates, so
// model() counts them in the input and names them apart. service_tier is
// the tier that served the call (https://docs.anthropic.com/en/api/service-tiers).
type usage struct {
	InputTokens              int64  `json:"input_tokens"`
	CacheCreationInputTokens int64  `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     int64  `json:"cache_read_input_tokens"`
	OutputTokens             int64  `json:"output_tokens"`
	ServiceTier              string `json:"service_tier"`
}

func (u usage) input() int64 {
	return u.InputTokens + u.CacheCreationInputTokens + u.CacheReadInputTokens
}

// model is u as model.Usage: every input token in InputTokens, the cache's
// reads and writes as its parts.
func (u usage) model() model.Usage {
	return model.Usage{InputTokens: u.input(), OutputTokens: u.OutputTokens,
		CachedInputTokens: u.CacheReadInputTokens, CacheWriteTokens: u.CacheCreationInputTokens}
}

// served is the lane a usage's service_tier names. Anthropic's priority
// tier is a commitment bought ahead, not a per-call premium aijobs could
// price, and "batch" is the batch lane's own answer: only "standard" is
// read, so a rung is priced at its standard price when Anthropic says so
// and at the lane asked for otherwise (docs/providers.md).
func served(tier string) job.Lane {
	if tier == "standard" {
		return job.Standard
	}
	return ""
}

type messagesResponse struct {
	Type       string         `json:"type"`
	Model      string         `json:"model"`
	Content    []contentBlock `json:"content"`
	StopReason string         `json:"stop_reason"`
	Usage      *usage         `json:"usage"`
	Error      *errorBody     `json:"error"`
}

// Generate makes one Messages call.
func (c *Client) Generate(ctx context.Context, r model.Request) (model.Response, error) {
	if r.Model == "" {
		r.Model = c.cfg.Model
	}
	if err := unsendable(r.Options); err != nil {
		return model.Response{}, err
	}
	if r.MaxTokens == 0 { // the API requires a limit: the worst case is the one sent
		r.MaxTokens = DefaultMaxTokens
	}
	hr, sent, err := c.api().Post(ctx, c.url, c.request(r), c.cfg.Stream)
	if err != nil {
		return model.Response{}, err
	}
	ctx = hr.Context()
	resp, err := c.cfg.HTTPClient.Do(hr)
	if err != nil {
		return model.Response{}, transportError(ctx, err, "", sent.Unanswered(r, c.cfg.Stream))
	}
	defer resp.Body.Close()
	at := time.Now()
	out, err := c.answer(ctx, resp, r)
	return model.Heard(out, err, resp.Header, at)
}

// api is the Messages API as every request calls it: the version, and
// the key when there is one.
func (c *Client) api() model.API {
	h := http.Header{}
	h.Set("Anthropic-Version", c.cfg.Version)
	if c.cfg.APIKey != "" {
		h.Set("X-Api-Key", c.cfg.APIKey)
	}
	return model.API{Provider: "anthropic", Header: h}
}

// answer reads what the server answered, whatever its status.
func (c *Client) answer(ctx context.Context, resp *http.Response, r model.Request) (model.Response, error) {
	reqID := requestID(resp.Header)
	if resp.StatusCode/100 != 2 {
		return model.Response{}, statusError(resp.StatusCode, reqID, model.ErrorBody(resp.Body))
	}
	if c.cfg.Stream {
		return readStream(ctx, resp.Body, r, reqID)
	}
	// From here the server answered: whatever became of the body, it may
	// have generated the whole answer, and an answer without counts is
	// billed the worst case.
	lost := model.Unanswered(r, false)
	var mr messagesResponse
	if err := json.NewDecoder(resp.Body).Decode(&mr); err != nil {
		if ctx.Err() != nil || model.IsTransport(err) {
			return model.Response{}, transportError(ctx, err, reqID, lost)
		}
		return model.Response{}, &model.Error{Class: job.ProviderError, Detail: "anthropic: unparseable response",
			Usage: lost, Err: fmt.Errorf("anthropic: decode response: %w", err)}
	}
	if mr.Type == "error" && mr.Error != nil {
		e := bodyError(fmt.Sprintf("http %d", resp.StatusCode), resp.StatusCode, reqID, *mr.Error)
		e.Usage = lost
		return model.Response{}, e
	}
	if mr.Type != "message" {
		return model.Response{}, &model.Error{Class: job.ProviderError, Detail: "anthropic: response is not a message",
			Usage: lost, Err: fmt.Errorf("anthropic: response type %q is not a message", shortToken(mr.Type))}
	}
	out := answer(mr.Content)
	u, tier := model.Unreported(r, out), ""
	if mr.Usage != nil {
		u, tier = mr.Usage.model(), mr.Usage.ServiceTier
	}
	if r.Progress != nil {
		r.Progress(int(u.OutputTokens))
	}
	name := mr.Model
	if name == "" {
		name = r.Model
	}
	return servedBy(tier)(finish(out, name, mr.StopReason, reqID, u))
}

// servedBy returns a function that marks a finished answer as served by
// tier's lane (served); an error is passed on as it is.
func servedBy(tier string) func(model.Response, error) (model.Response, error) {
	return func(resp model.Response, err error) (model.Response, error) {
		if err == nil {
			resp.Served = served(tier)
		}
		return resp, err
	}
}

// unsendable refuses, unsent and unbilled, options the Messages API has
// no place for: a seed, and a reasoning effort without a thinking
// budget. Config refuses such a job at create; one accepted when its
// route was another is refused here rather than run without them.
func unsendable(o job.Options) error {
	if o.Seed != nil || o.Reasoning != nil && o.Reasoning.BudgetTokens == 0 {
		return model.Errorf(job.InvalidRequest, "anthropic: the Messages API takes no seed and no reasoning effort")
	}
	if o.ResponseFormat != nil && o.Reasoning != nil { // schema.go: a forced tool refuses thinking
		return model.Errorf(job.InvalidRequest, "anthropic: a response_format is a forced tool, which Claude refuses with thinking")
	}
	return nil
}

// request maps a model request onto the Messages API: system messages go
// to the top-level system prompt, the rest stay in order.
func (c *Client) request(r model.Request) messagesRequest {
	req := messagesRequest{Model: r.Model, MaxTokens: r.MaxTokens, Temperature: r.Temperature, Stream: c.cfg.Stream,
		TopP: r.Options.TopP, StopSequences: r.Options.Stop, Messages: make([]message, 0, len(r.Messages))}
	if t := r.Options.Reasoning; t != nil && t.BudgetTokens > 0 {
		req.Thinking = &thinking{Type: "enabled", BudgetTokens: t.BudgetTokens}
	}
	forceTool(&req, r.Options.ResponseFormat)
	var system []string
	for _, m := range r.Messages {
		if m.Role == "system" {
			system = append(system, m.Text())
			continue
		}
		req.Messages = append(req.Messages, messageOf(m))
	}
	req.System = strings.Join(system, "\n\n")
	return req
}

// finish turns a completed answer into a response, or into an error that
// is still billed when the stop reason says the answer is not one.
func finish(output, modelName, reason, reqID string, u model.Usage) (model.Response, error) {
	var class job.ErrorClass
	switch reason {
	case "refusal":
		class = job.ContentFiltered
	case "model_context_window_exceeded":
		class = job.ContextLengthExceeded
	default:
		return model.Response{Output: output, Model: modelName, FinishReason: reason, Usage: u}, nil
	}
	detail := appendToken("stop_reason "+reason, reqID)
	return model.Response{}, &model.Error{Class: class, Detail: detail, Usage: u, Err: fmt.Errorf("anthropic: %s", detail)}
}
