package chaos

import (
	"fmt"
	"strings"

	"github.com/aijobs/aijobs/pkg/job"
)

// The parts of a generation's counts the model server reports as OpenAI
// does (platform.openai.com/docs/guides/prompt-caching, "Requests and
// responses"; platform.openai.com/docs/guides/reasoning): cached prompt
// tokens are a part of prompt_tokens (usage.prompt_tokens_details.
// cached_tokens; the Responses API's usage.input_tokens_details), billed
// at the cached input price; reasoning tokens a part of completion_tokens
// (completion_tokens_details.reasoning_tokens; output_tokens_details),
// billed as output. A record that priced every prompt token at the input
// price would be above the bill: invariant 3 holds the worker to the
// parts.

// cachedTokens is the part of a prompt of in tokens read from the cache
// at share part: at least one token on a hit, and never the whole prompt
// (the provider caches a prefix, and processes what follows it).
func cachedTokens(in int64, part float64) int64 {
	if part <= 0 || in < 2 {
		return 0
	}
	return min(max(1, int64(float64(in)*part)), in-1)
}

// reasoningTokens is the part of p's output that is reasoning, on a
// non-streamed answer: at least one visible token is left. A stream
// reports none: its reasoning tokens would come before its first chunk,
// and a stream cut before its usage chunk would be billed for tokens no
// chunk told its client of (the record could not match the bill).
func reasoningTokens(p GenPlan) int64 {
	if p.ReasoningPart <= 0 || p.Tokens < 2 {
		return 0
	}
	return min(max(1, int64(float64(p.Tokens)*p.ReasoningPart)), int64(p.Tokens-1))
}

// tierName is the service_tier an answer names for the lane that served
// it: OpenAI calls the standard tier "default"
// (platform.openai.com/docs/api-reference/chat/object, service_tier).
func tierName(l job.Lane) string {
	if l == job.Standard || l == "" {
		return "default"
	}
	return string(l)
}

// chatUsage is g's usage as a chat completion (whole or its stream's
// usage chunk) reports it: the totals, and which parts of them are cached
// and reasoning tokens.
func chatUsage(g Generation) map[string]any {
	return map[string]any{"prompt_tokens": g.Prompt, "completion_tokens": g.Output, "total_tokens": g.Prompt + g.Output,
		"prompt_tokens_details":     map[string]any{"cached_tokens": g.Cached},
		"completion_tokens_details": map[string]any{"reasoning_tokens": g.Reasoning}}
}

// responsesUsage is the same counts as a Responses object reports them.
func responsesUsage(in, cached, out, reasoning int64) map[string]any {
	return map[string]any{"input_tokens": in, "output_tokens": out, "total_tokens": in + out,
		"input_tokens_details":  map[string]any{"cached_tokens": cached},
		"output_tokens_details": map[string]any{"reasoning_tokens": reasoning}}
}

// UsageCount is what the ledger says of aijobs' billed generations'
// parts: those that read prompt tokens from the cache, how many, and what
// that took off the bill against the input price; those with reasoning
// tokens; and the priority requests served (and billed) at standard.
type UsageCount struct {
	Cached, Reasoning int
	CachedTokens      int64
	CacheSaved        job.Nanocents
	Priority          int
	AtStandard        int
}

// countUsage counts the parts of aijobs' billed generations, each priced
// in the lane that served it.
func (r *Report) countUsage(gens []Generation, prices map[laneKey]priced) {
	for _, g := range gens {
		if g.NS != "aj" || !g.Billed() {
			continue
		}
		if g.Cached > 0 {
			p := prices[laneKey{g.Model, g.ServedLane()}].price
			whole := g.Tokens()
			whole.CachedInput = 0
			r.Usage.Cached++
			r.Usage.CachedTokens += g.Cached
			r.Usage.CacheSaved += p.Bill(whole) - p.Bill(g.Tokens())
		}
		if g.Reasoning > 0 {
			r.Usage.Reasoning++
		}
		if g.Lane == job.Priority {
			r.Usage.Priority++
		}
		if g.AtStandard() {
			r.Usage.AtStandard++
		}
	}
}

// renderUsage is the line that says how often the bill's parts came up.
func (r *Report) renderUsage(b *strings.Builder) {
	u := r.Usage
	fmt.Fprintf(b, "usage parts (aijobs' %d billed generations): %d read %d prompt tokens from the cache (%s less than at the input price), %d had reasoning tokens; %d of %d billed priority requests served at standard (ramp limit)\n",
		r.AijobsBilled, u.Cached, u.CachedTokens, u.CacheSaved, u.Reasoning, u.AtStandard, u.Priority)
}
