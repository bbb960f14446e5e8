package config

import (
	"regexp"
	"strings"

	"github.com/aijobs/aijobs/pkg/job"
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

// claude4 matches the Claude 4.x ids (opus, sonnet, haiku; 4, 4.1, 4.5
// and on), bare or as Bedrock names them.
var claude4 = regexp.MustCompile(`(^|\.)claude-(opus|sonnet|haiku)-4($|[-@:])`)

// thinkingLast matches the Claude 4.x ids from 4.7 on, which refuse a
// thinking budget: "Claude 4.7 and later models do not support it and
// reject requests that use it, returning a 400 error"
// (platform.claude.com/docs/en/build-with-claude/extended-thinking).
var thinkingLast = regexp.MustCompile(`(^|\.)claude-(opus|sonnet|haiku)-4-([7-9]|[1-9][0-9])($|[-@:])`)

// thinks reports whether a Claude model id takes an extended thinking
// budget: Claude 3.7 Sonnet and the 4.x models before 4.7
// (docs.aws.amazon.com/bedrock/latest/userguide/claude-messages-extended-thinking.html
// lists them for Bedrock; Anthropic's API takes the same models).
func thinks(model string) bool {
	return (strings.Contains(model, "claude-3-7-sonnet") || claude4.MatchString(model)) && !thinkingLast.MatchString(model)
}

// optionsTaken are the input options (job.Options) a rung of kind's model
// honours, background for an openai entry speaking the Responses API;
// docs/providers.md, "Sampling and reasoning options", tables them with
// their sources. takes adds the response format (schema.go) and the
// content parts (media.go).
func optionsTaken(kind, model string, background bool) job.Takes {
	switch kind {
	case KindFake:
		// The fake generates canned text: every option is accepted, and
		// none changes its answer.
		return job.Takes{TopP: true, Stop: true, Seed: true, Effort: true, Budget: true}
	case KindOpenAI:
		return openAITakes(model, background)
	case KindAnthropic, KindBedrock:
		// Messages and Converse both take top_p and stop sequences
		// (Anthropic's top_p and stop_sequences; Converse's
		// inferenceConfig topP and stopSequences), neither a seed. Claude
		// 4.x takes temperature or top_p, not both (issue K;
		// BerriAI/litellm#15097), on Bedrock as on Anthropic's API.
		t := job.Takes{TopP: true, Stop: true, TemperatureOrTopP: claude4.MatchString(model)}
		if thinks(model) {
			t.Budget, t.ReasoningTopP = true, 0.95
		}
		return t
	}
	return job.Takes{}
}

// openAITakes are takes for an openai entry. Chat completions take top_p,
// stop and seed (platform.openai.com/docs/api-reference/chat/create); the
// reasoning family takes reasoning_effort and refuses stop with 400
// unsupported_parameter ("Unsupported parameter: 'stop' is not supported
// with this model.", huggingface/smolagents#1671 for gpt-5-mini,
// crewAIInc/crewAI#2738 for o3, huggingface/smolagents#1893 for gpt-5.2).
// The Responses API has no stop and no seed at all
// (platform.openai.com/docs/api-reference/responses/create).
func openAITakes(model string, background bool) job.Takes {
	reasoning := fixedTemperature(KindOpenAI, model) || strings.HasPrefix(model, "gpt-5") && !strings.HasPrefix(model, "gpt-5-chat")
	t := job.Takes{TopP: true, Stop: !reasoning, Seed: true}
	if reasoning {
		t.Effort, t.ReasoningTopP = true, 1
	}
	if background {
		t.Stop, t.Seed = false, false
	}
	return t
}
