// Package model is the seam between the worker and whoever generates text.
// A Provider makes exactly one call per Generate (its own retries are off:
// retries happen only through the claim path, where they are counted and
// paid for) and reports what the call cost, even when it failed.
package model

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aijobs/aijobs/pkg/job"
	"github.com/aijobs/aijobs/pkg/wire"
)

// Request is one generation. Model is the provider's own model id.
type Request struct {
	JobID       string
	Model       string
	Messages    []job.Message
	MaxTokens   int
	Temperature *float64
	// Options are the job's other sampling and reasoning options, each
	// mapped onto the provider's wire where it takes it; the job was
	// refused at create if a rung of its route could not honour one
	// (job.Route.CheckOptions), so a client sends every one it is given.
	Options job.Options
	// Progress, when set, is told the number of output tokens received so
	// far; streaming providers call it as tokens arrive. It must not block.
	Progress func(outputTokens int)
	// Started, when set, is told the id under which a provider that keeps
	// generations by id (OpenAI's background responses; such a provider
	// has a method Resumes() bool that answers true) keeps this one, once,
	// as soon as it is known and before the call waits for the answer:
	// the worker records it on the job, so that a worker taking the job
	// over fetches the answer instead of paying for it again. The call
	// waits for it to return.
	Started func(id string)
	// Resume, when set, is the id of a generation an earlier call started
	// (Started): the call fetches it, waiting while it runs, and never
	// generates. Its usage is that generation's, billed once, when it was
	// made; fetching is free. A generation the provider no longer has
	// (expired, never made, another key's) is ErrGone.
	Resume string
	// Peek, with a provider that keeps generations by id, makes the call
	// wait for nothing (a detached rung: docs/resume.md, "Detached
	// routes"): a new generation answers ErrStillRunning as soon as
	// Started was told its id; a resumed one (Resume) is read once, and
	// answers its end, or ErrStillRunning while it runs or when the read
	// itself failed in a way that may pass. A generation the call made and
	// then left running is neither cancelled nor billed by the call: the
	// caller reattaches it later, and owns it.
	Peek bool
	// Lane is the service tier the call asks for: flex or priority are
	// sent as the provider's service_tier; "" and standard send nothing.
	// A flex call the provider refuses for want of capacity fails with
	// job.CapacityUnavailable, never job.RateLimited: the worker then
	// moves the call to a faster lane rather than waiting on the key.
	Lane job.Lane
	// Reasons says the model reasons before it answers (job.Rung.Reasons):
	// tokens it bills as output that no stream delta or answer text shows,
	// so a call whose counts never came is estimated at MaxTokens.
	Reasons bool
	// Texts, when set, ask for embeddings instead of a generation
	// (docs/embeddings.md): one vector a text, at Dimensions when it is
	// not 0. The provider may split them into calls of its per-request
	// limit (an exception to one call per Generate: the attempt is still
	// one, its usage the calls' sum) and answers the vectors as the
	// Output, in wire.EncodeEmbeddings' format.
	Texts      []string
	Dimensions int
}

// RequestFor is job id's request to rung for input in: its messages, the
// rung's output cap, whether it reasons, and every option the input carries. The worker's call
// and resume and the collector's batch all start from it, so a field the
// input gains reaches every provider call at once (three copies built
// field by field once let an option through to one and not the others).
func RequestFor(id string, rung job.Rung, in job.Input) Request {
	r := Request{JobID: id, Model: rung.Model, Messages: in.Messages, MaxTokens: rung.OutputCap(in),
		Temperature: in.Temperature, Options: in.Options, Reasons: rung.Reasons, Texts: in.Texts, Dimensions: in.Dimensions}
	if in.Embeds() {
		// An embedding bills no output, and a lost answer's estimate
		// (Unanswered) must not price the rung's output cap.
		r.MaxTokens = 0
	}
	return r
}

// ErrGone is what a resumed call (Request.Resume) answers when the
// provider no longer has the generation: the caller generates again.
var ErrGone = errors.New("model: the generation is no longer kept")

// ErrStillRunning is what a call that peeks (Request.Peek) answers when
// the generation has not ended yet: nothing is billed by this answer.
var ErrStillRunning = errors.New("model: the generation is still running")

// Usage is what the provider reported, the only basis of cost: the worker
// prices it at the configured rung's price, so a provider never needs to
// know what it charges and the record's cost has one formula.
type Usage struct {
	// InputTokens counts every input token, those the provider read from
	// or wrote to its prompt cache included: each client adds up what its
	// provider reports apart (Anthropic's and Bedrock's input counts leave
	// the cache out; OpenAI's prompt_tokens holds it).
	InputTokens int64 `json:"input_tokens"`
	// OutputTokens counts every output token, reasoning tokens included:
	// every provider bills them as output.
	OutputTokens int64 `json:"output_tokens"`
	// CachedInputTokens and CacheWriteTokens are the parts of InputTokens
	// read from and written to the prompt cache, priced at the rung's
	// cached rates (job.Price.Bill); ReasoningTokens the part of
	// OutputTokens the model reasoned with, kept for the record only.
	CachedInputTokens int64 `json:"cached_input_tokens,omitempty"`
	CacheWriteTokens  int64 `json:"cache_write_tokens,omitempty"`
	ReasoningTokens   int64 `json:"reasoning_tokens,omitempty"`
	// Estimated marks counts the provider did not report (an answer lost
	// or cut before its usage arrived): they are then an upper estimate of
	// what the provider may bill, so an attempt is never recorded as free
	// because its answer was lost. The record says its cost is estimated.
	Estimated bool `json:"estimated,omitempty"`
}

// Tokens is u as the provider bills it. A negative count (a provider's
// bug, or a hostile server) is none, rather than lowering what the job
// has spent and lifting its budget.
func (u Usage) Tokens() job.Tokens {
	return job.Tokens{Input: max(u.InputTokens, 0), Output: max(u.OutputTokens, 0),
		CachedInput: max(u.CachedInputTokens, 0), CacheWrite: max(u.CacheWriteTokens, 0)}
}

// Cost is what the usage costs at p (job.Price.Bill).
func (u Usage) Cost(p job.Price) job.Nanocents { return p.Bill(u.Tokens()) }

// Saved is what u saved on rung g against its standard lane (job.Rung.Saved).
func (u Usage) Saved(g job.Rung) job.Nanocents { return g.Saved(u.Tokens()) }

// Response is a successful generation and the usage it was billed for.
type Response struct {
	Output       string `json:"output"`
	Model        string `json:"model"`
	FinishReason string `json:"finish_reason,omitempty"`
	Usage        Usage  `json:"usage"`
	// Left is what the provider's rate-limit headers said is left of the
	// key's limits (zero when it said nothing): the worker lowers the key's shared bucket to it.
	Left Left `json:"-"`
	// Served is the lane the provider says served the call ("": it said
	// nothing, the lane asked for): the call is priced at it
	// (job.Rung.Served).
	Served job.Lane `json:"-"`
}

// Provider generates. Implementations are safe for concurrent use. Every
// call returns its usage, failed ones included: what the provider
// reported or, where it never did, an upper estimate marked Estimated
// (Unanswered, Unreported, StreamUsage); a request that never reached the
// provider (TraceSent) costs nothing.
type Provider interface {
	Generate(ctx context.Context, r Request) (Response, error)
}

// Error is a failed generation, normalised: Class is one of job's error
// classes, Detail a short secret-free note (a status code, an error type),
// and Usage what the failed call still consumed (and is billed for), as
// the provider reported it or, when it could not, as estimated.
type Error struct {
	Class  job.ErrorClass
	Detail string
	Usage  Usage
	// Pause is how long the provider asked callers of this key to wait: a
	// 429's retry-after, or the reset of a limit its headers say is spent;
	// zero when it said nothing.
	Pause time.Duration
	Err   error
}

func (e *Error) Error() string {
	s := "model: " + string(e.Class)
	if e.Detail != "" {
		s += " (" + e.Detail + ")"
	}
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

func (e *Error) Unwrap() error { return e.Err }

// Errorf builds an *Error of class with a formatted detail.
func Errorf(class job.ErrorClass, format string, args ...any) *Error {
	return &Error{Class: class, Detail: fmt.Sprintf(format, args...)}
}

// Classify returns the class and billed usage of any error a provider
// returned. A context that ended is a timeout (deadline) or a
// cancellation; anything unrecognised is internal, never a vendor string.
func Classify(err error) (job.ErrorClass, Usage) {
	var me *Error
	if errors.As(err, &me) {
		if me.Class.Valid() {
			return me.Class, me.Usage
		}
		return job.Internal, me.Usage
	}
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return job.Timeout, Usage{}
	case errors.Is(err, context.Canceled):
		return job.Cancelled, Usage{}
	}
	return job.Internal, Usage{}
}

// Result is what a job that r answered shows as its result: the public
// wire.Result, not the provider seam's own type, so that a change to this
// package cannot reshape what clients read. The worker and the batch
// lane's collector both record it.
func (r Response) Result() wire.Result {
	return wire.Result{Output: r.Output, Model: r.Model, FinishReason: r.FinishReason,
		Usage: wire.Usage{InputTokens: r.Usage.InputTokens, OutputTokens: r.Usage.OutputTokens,
			CachedInputTokens: r.Usage.CachedInputTokens, CacheWriteTokens: r.Usage.CacheWriteTokens,
			ReasoningTokens: r.Usage.ReasoningTokens, Estimated: r.Usage.Estimated}}
}
