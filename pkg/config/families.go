package config

import (
	"regexp"
	"strings"
)

// fixedTemperature reports whether kind's model takes no temperature but
// the default 1. OpenAI's reasoning models answer any other with 400
// unsupported_value ("Unsupported value: 'temperature' does not support
// 0.2 with this model. Only the default (1) value is supported.";
// platform.openai.com/docs/guides/reasoning, and reported against many
// clients, e.g. vercel/ai#6034, OpenHands/OpenHands#4131): the o-series
// and the first gpt-5 family (gpt-5, -mini, -nano, -pro), but not
// gpt-5-chat. From gpt-5.1 on, a call that sends no reasoning effort
// (aijobs sends none) runs at effort "none", where temperature is
// accepted (platform.openai.com/docs/guides/latest-model, parameter
// compatibility).
func fixedTemperature(kind, model string) bool {
	if kind != KindOpenAI {
		return false
	}
	for _, p := range []string{"o1", "o3", "o4"} {
		if model == p || strings.HasPrefix(model, p+"-") {
			return true
		}
	}
	rest, ok := strings.CutPrefix(model, "gpt-5")
	return ok && (rest == "" || strings.HasPrefix(rest, "-") && !strings.HasPrefix(rest, "-chat"))
}

// reasons reports whether kind's model reasons before it answers when
// asked for no reasoning effort (aijobs asks for none): OpenAI's
// o-series and first gpt-5 family, the models fixedTemperature names
// (their default effort is "medium"; from gpt-5.1 on it is "none",
// platform.openai.com/docs/api-reference/chat/create, reasoning_effort).
// Claude reasons only when asked to think, which aijobs never asks.
func reasons(kind, model string) bool { return fixedTemperature(kind, model) }

// opusWithoutTemperature matches Claude Opus 4.7 and later 4.x ids, bare
// or as Bedrock names them (anthropic.claude-opus-4-7-..., behind an
// inference profile's prefix).
var opusWithoutTemperature = regexp.MustCompile(`(^|\.)claude-opus-4-([7-9]|[1-9][0-9])($|[-@:])`)

// noTemperature reports whether kind's model refuses any temperature:
// Claude Opus 4.7 answers 400 invalid_request_error "`temperature` is
// deprecated for this model." whatever its value (Anthropic's migration
// guide, platform.claude.com/docs/en/about-claude/models/migration-guide;
// reported in UKGovernmentBEIS/inspect_ai#3721, HKUDS/nanobot#3418, and
// for claude-opus-4-8 in The-PR-Agent/pr-agent#2456), on Anthropic's API
// and on Bedrock alike.
func noTemperature(kind, model string) bool {
	return (kind == KindAnthropic || kind == KindBedrock) && opusWithoutTemperature.MatchString(model)
}
