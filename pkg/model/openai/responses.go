package openai

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/aijobs/aijobs/pkg/job"
	"github.com/aijobs/aijobs/pkg/model"
)

// Background mode (Config.Background) speaks OpenAI's Responses API: the
// create starts a generation the server keeps by id, and the call polls it
// until it ends. The id is handed to the worker (Request.Started) before
// the call waits, so a generation already paid for is fetched by whoever
// takes the job over (Request.Resume) instead of being made again.

// DefaultPollEvery is how often a background generation is polled when
// Config.PollEvery is zero: a generation takes seconds to minutes, and a
// poll is a free read, so a second wastes little of either.
const DefaultPollEvery = time.Second

const (
	// maxFailedPolls is how many polls in a row may fail before the call
	// gives up: a poll is an idempotent read, so a passing outage is
	// waited out, but a server gone for good must not hold the job until
	// its deadline.
	maxFailedPolls = 5
	// maxResponseBody caps a response object read into memory: it holds
	// the whole output, and a hostile server must not exhaust the worker.
	maxResponseBody = 16 << 20
	// cancelWithin bounds the cancel sent for a call that stops: it runs
	// after the call's own context ended, so nothing else bounds it.
	cancelWithin = 2 * time.Second
)

// Resumes reports whether the client keeps its generations by id, so the
// worker may record them (Request.Started) and resume them
// (Request.Resume).
func (c *Client) Resumes() bool { return c.cfg.Background }

type responsesRequest struct {
	Model           string        `json:"model"`
	Input           []chatMessage `json:"input"`
	MaxOutputTokens int           `json:"max_output_tokens,omitempty"`
	Temperature     *float64      `json:"temperature,omitempty"`
	// TopP and Reasoning are the job.Options the Responses API takes
	// (platform.openai.com/docs/api-reference/responses/create): it has
	// no stop and no seed, so config refuses them on a background rung.
	TopP       *float64   `json:"top_p,omitempty"`
	Reasoning  *reasoning `json:"reasoning,omitempty"`
	Background bool       `json:"background"`
	// Store keeps the response past background mode's polling window
	// (about ten minutes), so a worker taking over a long job can still
	// fetch it.
	Store bool `json:"store"`
	// ServiceTier is last and omitted when empty, as on chat completions.
	ServiceTier string `json:"service_tier,omitempty"`

	// Text carries the job's response_format (schema.go).
	Text *textConfig `json:"text,omitempty"`
}

// reasoning is the Responses API's reasoning configuration.
type reasoning struct {
	Effort string `json:"effort"`
}

// responsesUsage is a response's counts: input_tokens holds the cached
// ones and output_tokens the reasoning ones, as on chat completions.
type responsesUsage struct {
	InputTokens        int64 `json:"input_tokens"`
	OutputTokens       int64 `json:"output_tokens"`
	InputTokensDetails struct {
		CachedTokens int64 `json:"cached_tokens"`
	} `json:"input_tokens_details"`
	OutputTokensDetails struct {
		ReasoningTokens int64 `json:"reasoning_tokens"`
	} `json:"output_tokens_details"`
}

// responseObject is what the create, a poll and a cancel answer. Only
// the error's code is kept: its message may quote the prompt.
type responseObject struct {
	ID     string `json:"id"`
	Status string `json:"status"`
	Model  string `json:"model"`
	Output []struct {
		Type    string `json:"type"`
		Content []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
	} `json:"output"`
	Usage *responsesUsage `json:"usage"`
	// ServiceTier is the tier that served the generation (served).
	ServiceTier       string `json:"service_tier"`
	IncompleteDetails *struct {
		Reason string `json:"reason"`
	} `json:"incomplete_details"`
	Error *errorBody `json:"error"`
}

// text is the answer: the output text of every message, in order;
// reasoning and other items are not the answer.
func (o responseObject) text() string {
	var b strings.Builder
	for _, item := range o.Output {
		if item.Type != "message" {
			continue
		}
		for _, part := range item.Content {
			if part.Type == "output_text" {
				b.WriteString(part.Text)
			}
		}
	}
	return b.String()
}

// pending reports whether a status is one the generation leaves: any
// other is final, and polling it again would only read it again.
func pending(status string) bool { return status == "queued" || status == "in_progress" }

// errNotFound is a poll's 404: the server no longer has the response.
var errNotFound = errors.New("openai: response not found")

// call is one background Generate.
type call struct {
	c *Client
	r model.Request
	// id is the response's; resumed says an earlier call made it, so this
	// one is billed nothing and must leave it running when it stops.
	id      string
	resumed bool
	// h and at are the create's headers and when they came: the
	// rate-limit word on the key, which polls (free reads) do not carry.
	h  http.Header
	at time.Time
}

// background makes or resumes one background generation and waits for it.
func (c *Client) background(ctx context.Context, r model.Request) (model.Response, error) {
	if r.Model == "" {
		r.Model = c.cfg.Model
	}
	if o := r.Options; r.Resume == "" && (o.Stop != nil || o.Seed != nil) {
		// Config refuses such a job at create on a background rung; one
		// accepted when its route was another is refused here, unsent
		// and unbilled, rather than run without what it asked for.
		return model.Response{}, model.Errorf(job.InvalidRequest, "openai: the Responses API takes no stop or seed")
	}
	b := &call{c: c, r: r, id: r.Resume, resumed: r.Resume != ""}
	out, err := b.run(ctx)
	return heard(out, err, b.h, b.at)
}

// run hands the worker the id before it waits: a worker that dies while
// it waits leaves a generation already paid for, to be fetched, not made
// again.
func (b *call) run(ctx context.Context) (model.Response, error) {
	if b.resumed && b.r.Peek {
		return b.peek(ctx)
	}
	if b.resumed {
		return b.poll(ctx, false)
	}
	o, err := b.create(ctx)
	if err != nil {
		return model.Response{}, err
	}
	b.id = o.ID
	if b.id != "" && b.r.Started != nil {
		b.r.Started(b.id)
	}
	switch {
	case !pending(o.Status):
		return b.conclude(ctx, o)
	case b.id == "":
		return model.Response{}, &model.Error{Class: job.ProviderError, Detail: "openai: response has no id",
			Usage: b.lost(), Err: errors.New("openai: background response has no id")}
	case b.r.Peek:
		return model.Response{}, model.ErrStillRunning // the caller collects it later
	}
	return b.poll(ctx, true)
}

// create starts the generation: one POST, never retried, since each is a
// billed generation.
func (b *call) create(ctx context.Context) (responseObject, error) {
	req := responsesRequest{Model: b.r.Model, MaxOutputTokens: b.r.MaxTokens, Temperature: b.r.Temperature,
		TopP: b.r.Options.TopP, Background: true, Store: true, ServiceTier: serviceTier(b.r.Lane),
		Text: responsesText(b.r.Options.ResponseFormat)}
	if r := b.r.Options.Reasoning; r != nil && r.Effort != "" {
		req.Reasoning = &reasoning{Effort: r.Effort}
	}
	for _, m := range b.r.Messages {
		req.Input = append(req.Input, chatMessageOf(m, true))
	}
	hr, sent, err := b.c.api().Post(ctx, b.c.responses, req, false)
	if err != nil {
		return responseObject{}, err
	}
	ctx = hr.Context()
	resp, err := b.c.cfg.HTTPClient.Do(hr)
	if err != nil {
		return responseObject{}, transportError(ctx, err, sent.Unanswered(b.r, false))
	}
	defer resp.Body.Close()
	b.h, b.at = resp.Header, time.Now()
	if resp.StatusCode/100 != 2 {
		return responseObject{}, statusError(resp.StatusCode, model.ErrorBody(resp.Body), b.r.Lane)
	}
	// From here the server took the generation: whatever became of the
	// answer, it may be generating, and is billed the worst case.
	o, derr := decodeResponse(ctx, resp.Body)
	if derr != nil {
		derr.Usage = model.Unanswered(b.r, false)
		return responseObject{}, derr
	}
	return o, nil
}

// poll reads the response every PollEvery until it is final; tick says
// the create just told its status, so the first read waits a tick.
func (b *call) poll(ctx context.Context, tick bool) (model.Response, error) {
	every := b.c.cfg.PollEvery
	if every <= 0 {
		every = DefaultPollEvery
	}
	failed := 0
	for {
		if tick {
			if err := sleep(ctx, every); err != nil {
				return b.stop(ctx)
			}
		}
		tick = true
		o, retry, err := b.fetch(ctx)
		switch {
		case err == nil && pending(o.Status):
			failed = 0
			continue
		case err == nil:
			return b.conclude(ctx, o)
		case ctx.Err() != nil:
			return b.stop(ctx)
		case errors.Is(err, errNotFound):
			return model.Response{}, b.gone()
		case retry && failed < maxFailedPolls-1:
			failed++
			continue
		}
		return b.giveUp(ctx, err)
	}
}

// peek reads a resumed response once (Request.Peek): its end, or
// ErrStillRunning while it runs or when a read that may pass failed (the
// caller looks again later). A 404 is ErrGone, as for any resume.
func (b *call) peek(ctx context.Context) (model.Response, error) {
	o, retry, err := b.fetch(ctx)
	switch {
	case err == nil && pending(o.Status):
		return model.Response{}, model.ErrStillRunning
	case err == nil:
		return b.conclude(ctx, o)
	case errors.Is(err, errNotFound):
		return model.Response{}, b.gone()
	case retry && ctx.Err() == nil:
		return model.Response{}, model.ErrStillRunning
	}
	return model.Response{}, err
}

// Abandon asks the server to stop generation id, which a detached attempt
// started and nobody will collect (a cancelled job): best effort, as a
// stopped call's own cancel is. OpenAI cancels only a response created
// with background: true (POST /v1/responses/{id}/cancel,
// platform.openai.com/docs/api-reference/responses/cancel).
func (c *Client) Abandon(ctx context.Context, id string) {
	(&call{c: c, id: id}).cancel(ctx)
}

// fetch reads the response once. retry says the failure may pass (a
// poll is a free, idempotent read); every error but errNotFound is a
// *model.Error, billed nothing.
func (b *call) fetch(ctx context.Context) (responseObject, bool, error) {
	hr, err := b.c.api().Request(ctx, http.MethodGet, b.url(""), nil)
	if err != nil {
		return responseObject{}, false, err
	}
	resp, err := b.c.cfg.HTTPClient.Do(hr)
	if err != nil {
		return responseObject{}, true, transportError(ctx, err, model.Usage{})
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusNotFound:
		return responseObject{}, false, errNotFound
	case resp.StatusCode/100 != 2:
		retry := resp.StatusCode >= 500 || resp.StatusCode == http.StatusTooManyRequests
		// A poll reads a generation the server already took: no lane's
		// capacity is asked for, so its 429 is the key's.
		return responseObject{}, retry, statusError(resp.StatusCode, model.ErrorBody(resp.Body), "")
	}
	o, derr := decodeResponse(ctx, resp.Body)
	if derr != nil {
		return responseObject{}, true, derr
	}
	return o, false, nil
}

// decodeResponse reads a response object, capped at maxResponseBody.
func decodeResponse(ctx context.Context, body io.Reader) (responseObject, *model.Error) {
	data, err := io.ReadAll(io.LimitReader(body, maxResponseBody+1))
	if err != nil {
		return responseObject{}, transportError(ctx, err, model.Usage{})
	}
	var o responseObject
	switch {
	case len(data) > maxResponseBody:
		err = errors.New("openai: response object too large")
	default:
		err = json.Unmarshal(data, &o)
	}
	if err != nil {
		return responseObject{}, &model.Error{Class: job.ProviderError, Detail: "openai: unparseable response",
			Err: fmt.Errorf("openai: decode response: %w", err)}
	}
	return o, nil
}

// conclude turns a final response into the call's answer or error.
func (b *call) conclude(ctx context.Context, o responseObject) (model.Response, error) {
	out := o.text()
	switch o.Status {
	case "completed":
		return b.finish(o, out, "stop"), nil
	case "incomplete":
		reason := ""
		if o.IncompleteDetails != nil {
			reason = o.IncompleteDetails.Reason
		}
		switch reason {
		case "max_output_tokens": // the token cap, as chat completions' "length"
			return b.finish(o, out, "length"), nil
		case "content_filter":
			return model.Response{}, &model.Error{Class: job.ContentFiltered, Detail: "openai: incomplete content_filter",
				Usage: b.used(o, out)}
		}
		return model.Response{}, &model.Error{Class: job.ProviderError, Detail: "openai: incomplete response",
			Usage: b.used(o, out), Err: errors.New("openai: background response incomplete")}
	case "failed":
		return model.Response{}, failedError(o)
	case "cancelled":
		u := b.lost()
		if o.Usage != nil {
			u = o.Usage.billed()
		}
		return model.Response{}, &model.Error{Class: job.Cancelled, Detail: "openai: background response cancelled", Usage: u}
	}
	if !b.resumed { // a status we cannot wait out: stop what we pay for
		b.cancel(ctx)
	}
	return model.Response{}, &model.Error{Class: job.ProviderError, Detail: "openai: unknown response status",
		Usage: b.lost(), Err: errors.New("openai: background response has an unknown status")}
}

// finish is a response that ended with its answer.
func (b *call) finish(o responseObject, out, reason string) model.Response {
	u := b.used(o, out)
	if b.r.Progress != nil {
		b.r.Progress(int(u.OutputTokens))
	}
	name := o.Model
	if name == "" {
		name = b.r.Model
	}
	return model.Response{Output: out, Model: name, FinishReason: reason, Usage: u, Served: served(o.ServiceTier)}
}

// used is what a response that generated out was billed: its counts, or
// where a compatible server drops them, the chat path's estimate.
func (b *call) used(o responseObject, out string) model.Usage {
	if o.Usage != nil {
		return o.Usage.billed()
	}
	return model.Unreported(b.r, out)
}

// billed is the server's count as billed usage.
func (u responsesUsage) billed() model.Usage {
	return model.Usage{InputTokens: u.InputTokens, OutputTokens: u.OutputTokens,
		CachedInputTokens: u.InputTokensDetails.CachedTokens, ReasoningTokens: u.OutputTokensDetails.ReasoningTokens}
}

// failedError classifies a failed response by its error code, as an
// error body's; a code bodyError does not know is the request's when it
// names its input (a prompt, an image), a refusal when it names a policy,
// else the server's.
func failedError(o responseObject) *model.Error {
	var eb errorBody
	if o.Error != nil {
		eb = *o.Error
	}
	e := bodyError(http.StatusOK, eb)
	code := eb.code()
	switch {
	case e.Class != job.Internal:
	case strings.Contains(code, "policy"):
		e.Class = job.ContentFiltered
	case strings.HasPrefix(code, "invalid_") || strings.Contains(code, "image"):
		e.Class = job.InvalidRequest
	default:
		e.Class = job.ProviderError
	}
	e.Detail = "openai: background response failed"
	if code != "" && len(code) <= 64 {
		e.Detail += " " + code
	}
	e.Err = errors.New(e.Detail)
	if o.Usage != nil {
		e.Usage = o.Usage.billed()
	}
	return e
}

// lost is what a call that cannot tell what its generation cost is billed:
// the worst case for the call that made it (the server may finish it, and
// bills a cancelled one for what it made); nothing for a resume, whose
// generation is billed to the call that made it.
func (b *call) lost() model.Usage {
	if b.resumed {
		return model.Usage{}
	}
	return model.Unanswered(b.r, false)
}

// stop ends a call whose context ended. A generation it made is
// cancelled, best-effort, since nobody will wait for it; a resumed one is
// left running: this attempt may be the one cut off, and a later one may
// still fetch it.
func (b *call) stop(ctx context.Context) (model.Response, error) {
	if !b.resumed {
		b.cancel(ctx)
	}
	return model.Response{}, transportError(ctx, ctx.Err(), b.lost())
}

// giveUp ends a call whose polls failed for good; err is the last
// failure's *model.Error. Like stop, it cancels a generation it made.
func (b *call) giveUp(ctx context.Context, err error) (model.Response, error) {
	if !b.resumed {
		b.cancel(ctx)
	}
	var me *model.Error
	if !errors.As(err, &me) {
		me = &model.Error{Class: job.Internal, Detail: "openai: poll failed", Err: err}
	}
	me.Usage = b.lost()
	return model.Response{}, me
}

// gone is a 404 while polling. For a resume the generation is lost to
// this key (expired, never made, another key's), and the caller makes it
// again (model.ErrGone); a generation this call made and the server then
// dropped was still made, and is billed the worst case.
func (b *call) gone() *model.Error {
	if b.resumed {
		return &model.Error{Class: job.Internal, Detail: "openai: the background response is gone", Err: model.ErrGone}
	}
	return &model.Error{Class: job.ProviderError, Detail: "openai: the background response vanished",
		Usage: b.lost(), Err: errors.New("openai: background response not found")}
}

// cancel asks the server to stop the generation, on a context of its own:
// the call's has usually ended. What it answers changes nothing: the
// call is billed the worst case whether or not the cancel lands.
func (b *call) cancel(ctx context.Context) {
	ctx, done := context.WithTimeout(context.WithoutCancel(ctx), cancelWithin)
	defer done()
	hr, err := b.c.api().Request(ctx, http.MethodPost, b.url("/cancel"), nil)
	if err != nil {
		return
	}
	resp, err := b.c.cfg.HTTPClient.Do(hr)
	if err != nil {
		return
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	_ = resp.Body.Close()
}

// url is the response's address; the id is escaped, as it comes from the
// wire or from the job's record.
func (b *call) url(suffix string) string {
	return b.c.responses + "/" + url.PathEscape(b.id) + suffix
}

// sleep waits d, or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
