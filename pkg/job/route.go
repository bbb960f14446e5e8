package job

import (
	"fmt"
	"slices"
	"time"
)

// Route is a named way to run a model that callers pick with the job's
// `model` field: an ordered list of rungs, tried in turn within ONE attempt
// when a rung ends with one of the FallbackOn classes. The attempt's lease
// covers every rung, so a fallback never needs a second claim, and the
// attempt's cost is the sum of what each rung it reached consumed.
type Route struct {
	Rungs []Rung
	// FallbackOn are the classes on which an attempt moves on to the next
	// rung instead of ending; on any other class it ends with that class.
	FallbackOn []ErrorClass
}

// Rung is one provider and model with its own price, output cap and
// timeout. Provider names an entry of the deployment's provider table, so
// credentials live in one place however many rungs use them.
type Rung struct {
	Provider string
	Model    string
	Price    Price
	// MaxTokens caps the output tokens asked of this rung; 0 leaves the
	// job's own max_tokens alone.
	MaxTokens int
	Timeout   time.Duration
	// Limit is the provider key's rate limit (its entry's limits), taken
	// from the key's shared bucket before each call; zero takes nothing.
	Limit RateLimit
	// Lane is the lane this rung's calls are served in ("" on a
	// configured rung: its own price is its standard lane's), and Lanes
	// the other lanes it offers, each a copy of the rung with the lane's
	// price, timeout and p99 (Offers, Plan).
	Lane  Lane
	Lanes []Rung
	// Completion is the lane's configured p99 completion time (P99),
	// what the worker's choice of lane holds to the job's deadline.
	Completion time.Duration
	// Base is the standard lane's price of the rung a lane belongs to:
	// what a call in the lane saved is measured against (Saved).
	Base Price
	// Window, MinJobs and MaxJobs are a batch lane's collection: how long
	// its first enlisted job waits for others, the fewest jobs a batch
	// is submitted with (a provider's minimum: Bedrock's is 100), and the
	// most a batch holds.
	Window           time.Duration
	MinJobs, MaxJobs int
	// FixedTemperature marks a rung whose model takes no temperature but
	// the default 1 (OpenAI's reasoning models answer any other
	// 400 unsupported_value): config sets it from the model's family, and
	// a job that sets another is refused at create (Route.CheckOptions).
	FixedTemperature bool
	// Reasons marks a rung whose model reasons before it answers by
	// default (OpenAI's o-series and first gpt-5 family): its reasoning is
	// billed as output yet streamed as nothing, so an answer whose counts
	// never came is estimated at the whole output cap. Set by config.
	Reasons bool
	// NoTemperature marks a rung whose model refuses any temperature
	// (Claude Opus 4.7 answers 400 "`temperature` is deprecated for this
	// model."), set by config like FixedTemperature.
	NoTemperature bool
	// Takes are the input Options the rung honours, set by config from
	// its provider and model family like FixedTemperature.
	Takes Takes
	// Detached marks a rung whose calls run detached (docs/resume.md,
	// "Detached routes"): the worker starts the generation, records it and
	// returns, and a delayed message brings the job back to reattach it.
	// Config allows it only on a provider that keeps generations by id.
	Detached bool
	// Embeds marks a rung whose model makes embeddings: it takes an
	// embedding input (texts) and no chat input (docs/embeddings.md).
	// Set by config from the model's name.
	Embeds bool
}

// Timeout is the longest an attempt on the route may run: the timeout of
// every lane of every rung, one after another (a lane's refusal or
// timeout moves the attempt on to the rung's next lane). A batch lane has
// none: the worker makes no call in it.
func (r Route) Timeout() time.Duration {
	var d time.Duration
	for _, g := range r.Rungs {
		for _, o := range g.Offers() {
			if o.Detached {
				// Its call only starts the generation: the reattaches that
				// follow hold the rung's own timeout (docs/resume.md,
				// "Detached routes"), in invocations of their own.
				d += min(o.Timeout, DetachedStart)
				continue
			}
			d += o.Timeout
		}
	}
	return d
}

// DetachedStart is the most a detached rung's call counts toward its
// route's timeout (the attempt's limit, the worker's timeout): it starts
// the generation and waits for no answer.
const DetachedStart = 30 * time.Second

// RungOf is the index of the rung that calls provider's model, -1 when
// none does (the route changed since a generation was started on it).
func (r Route) RungOf(provider, model string) int {
	return slices.IndexFunc(r.Rungs, func(g Rung) bool { return g.Provider == provider && g.Model == model })
}

// CheckOptions refuses a job allowing lanes (nil: any) on route r, named
// model, whose input sets an option a rung it may reach refuses: sent,
// the provider would answer 400 and the job would end failed and its
// input quarantined, for an option the caller can simply leave out.
// Nothing is dropped silently either: the caller hears which option and
// which rung.
func (r Route) CheckOptions(model string, in Input, lanes []Lane) error {
	for i, g := range r.Rungs {
		if _, reached := g.cheapest(Input{}, lanes); !reached {
			continue
		}
		field, why := g.refusal(in)
		if field == "" && in.Embeds() && g.offersBatch(lanes) && !g.Takes.BatchEmbeddings {
			field, why = "lanes", "offers a batch lane that takes no embedding job (docs/embeddings.md, \"The batch lane\"): allow lanes without batch, e.g. [\"standard\"]"
		}
		if field != "" {
			return &Error{Code: CodeUnsupported, Field: field, Message: fmt.Sprintf(
				"route %q rung %d (%s/%s) %s: change %s or name another route",
				model, i, g.Provider, g.Model, why, field)}
		}
	}
	return nil
}

// FallsBackOn reports whether an attempt moves past a rung that ended with c.
func (r Route) FallsBackOn(c ErrorClass) bool { return slices.Contains(r.FallbackOn, c) }

// Reserve is what an attempt must be able to pay before it may start: the
// worst case of the route's first rung for this input, in the cheapest
// lane the job allows (lanes, nil: any) of the first rung that offers
// one. It is computed when the job is created and stored on the record,
// so the claim itself refuses an attempt the budget cannot cover
// (conditions cannot do arithmetic); an attempt that chooses a dearer
// lane raises its hold before the call (attempt.holdFor).
func (r Route) Reserve(in Input, lanes []Lane) Nanocents {
	if g, ok := r.Entry(lanes); ok {
		wc, _ := g.cheapest(in, lanes)
		return wc
	}
	return 0
}

// Entry is the rung an attempt of a job allowing lanes (nil: any) starts
// on: the first that offers one of them; false when none does.
func (r Route) Entry(lanes []Lane) (Rung, bool) {
	for _, g := range r.Rungs {
		if _, ok := g.cheapest(Input{}, lanes); ok {
			return g, true
		}
	}
	return Rung{}, false
}

// OutputCap is the max_tokens this rung is asked for: the job's, lowered
// to the rung's own cap.
func (g Rung) OutputCap(in Input) int {
	if g.MaxTokens > 0 && (in.MaxTokens <= 0 || g.MaxTokens < in.MaxTokens) {
		return g.MaxTokens
	}
	return in.MaxTokens
}

// outputTokens is the most output a call for in can bill: its output cap,
// or none for embeddings, which bill their input only.
func (g Rung) outputTokens(in Input) int64 {
	if in.Embeds() {
		return 0
	}
	return int64(g.OutputCap(in))
}

// WorstTokens is the most tokens a call on this rung can use: the prompt's
// ceiling and every output token it may produce, what a take from the
// provider's bucket takes before the call.
func (g Rung) WorstTokens(in Input) int64 {
	return in.Ceiling() + g.outputTokens(in)
}

// WorstCase is the most a call on this rung can cost: every output token it
// may produce at the output price, plus an over-estimate of the prompt (one
// token per two bytes of content, and eight per message, where providers
// count about four bytes a token). A rung is called only if the budget left
// covers it, so a job overruns its budget by no more than the prompt
// estimate's error.
func (g Rung) WorstCase(in Input) Nanocents {
	return g.Price.Cost(in.Ceiling(), g.outputTokens(in))
}

// PromptCeiling over-estimates the prompt tokens of messages: one token
// per two bytes of content, and eight per message, where providers count
// about four bytes a token; an image or a document at partTokens' bound
// (docs/providers.md, "Content parts"). It prices the prompt of a call
// whose usage the provider never reported, and of the worst case a budget
// must cover.
func PromptCeiling(msgs []Message) int64 {
	var bytes, parts int64
	for _, m := range msgs {
		bytes += int64(len(m.Content))
		for _, p := range m.Parts {
			parts += partTokens(p)
		}
	}
	return (bytes+1)/2 + parts + 8*int64(len(msgs))
}
