package config

import (
	"strings"

	"github.com/aijobs/aijobs/pkg/job"
)

// share is a rate as a fraction of the input price, num/den.
type share struct{ num, den int64 }

// of is s of rate, rounded up: a rounded rate is never below the bill.
func (s share) of(rate job.Nanocents) job.Nanocents {
	return job.Nanocents((int64(rate)*s.num + s.den - 1) / s.den)
}

// cacheShares are the providers' documented prompt-cache rates as shares
// of a model's input price, by the model id's prefix, longest first:
//   - OpenAI (platform.openai.com/docs/pricing): cached input is 10% of
//     input on the gpt-5 family, 25% on gpt-4.1, o3 and o4-mini, 50% on
//     gpt-4o, o1 and o3-mini; writing the cache costs nothing extra.
//   - Anthropic (docs.anthropic.com, "Prompt caching", Pricing): a cache
//     read is 0.1x the input price, a five-minute cache write 1.25x.
//   - Bedrock (aws.amazon.com/bedrock/pricing): Claude as Anthropic
//     prices it; Amazon Nova reads at 25% of input.
//
// A model not listed keeps the input price for both (job.Price's zero),
// so the record is never below the bill; a rung's price may state
// cached_input and cache_write itself.
var cacheShares = map[string][]struct {
	prefix      string
	read, write share
}{
	KindOpenAI: {
		{"gpt-5", share{1, 10}, share{1, 1}},
		{"gpt-4.1", share{1, 4}, share{1, 1}},
		{"o3-mini", share{1, 2}, share{1, 1}},
		{"o4-mini", share{1, 4}, share{1, 1}},
		{"o3", share{1, 4}, share{1, 1}},
		{"gpt-4o", share{1, 2}, share{1, 1}},
		{"o1", share{1, 2}, share{1, 1}},
	},
	KindAnthropic: {{"claude", share{1, 10}, share{5, 4}}},
	// The fake's own (fake.Rates): every model.
	KindFake: {{"", share{1, 2}, share{5, 4}}},
	KindBedrock: {
		{"anthropic.", share{1, 10}, share{5, 4}},
		{"amazon.nova", share{1, 4}, share{1, 1}},
	},
}

// cacheRates is p with the cached input and cache write rates kind's
// provider bills for model, where p does not state them.
func cacheRates(kind, model string, p job.Price) job.Price {
	for _, s := range cacheShares[kind] {
		if !strings.HasPrefix(bedrockBase(kind, model), s.prefix) {
			continue
		}
		if p.CachedInputPerToken == 0 {
			p.CachedInputPerToken = s.read.of(p.InputPerToken)
		}
		if p.CacheWritePerToken == 0 {
			p.CacheWritePerToken = s.write.of(p.InputPerToken)
		}
		return p
	}
	return p
}

// bedrockBase is a Bedrock model id without its cross-region inference
// profile's prefix ("us.anthropic.claude-..." is "anthropic.claude-...");
// any other kind's model as it is.
func bedrockBase(kind, model string) string {
	if kind != KindBedrock {
		return model
	}
	if _, rest, ok := strings.Cut(model, "."); ok && (strings.HasPrefix(rest, "anthropic.") || strings.HasPrefix(rest, "amazon.")) {
		return rest
	}
	return model
}
