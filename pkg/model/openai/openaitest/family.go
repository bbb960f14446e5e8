package openaitest

import (
	"net/http"
	"strconv"
	"strings"
)

// How OpenAI answers by model family. Each rule cites where it is
// written down; docs/providers.md ("OpenAI") lists them with the tests
// that hold the client to them.

// reasoningTokens is what a reasoning model reports it reasoned with,
// within the output cap.
const reasoningTokens = 8

// reasoningModel reports whether model is of OpenAI's reasoning (current)
// family: gpt-5* but gpt-5-chat*, and the o-series (o1, o3, o4-mini).
// They refuse max_tokens and any temperature but 1, and report
// completion_tokens_details.reasoning_tokens (OpenAI's reasoning guide,
// https://platform.openai.com/docs/guides/reasoning). Older models
// (gpt-4o*, gpt-4.1*), gpt-5-chat* and any other name a compatible server
// serves accept both token fields and any temperature.
func reasoningModel(model string) bool {
	switch {
	case strings.HasPrefix(model, "gpt-5-chat"):
		return false
	case strings.HasPrefix(model, "gpt-5"), strings.HasPrefix(model, "o1"),
		strings.HasPrefix(model, "o3"), strings.HasPrefix(model, "o4"):
		return true
	}
	return false
}

// reasonsByDefault reports whether model reasons, and so takes no
// temperature but 1, when the request names no reasoning effort (aijobs
// names none): the o-series and the first gpt-5 family (gpt-5, -mini,
// -nano, -pro) default to effort "medium"; from gpt-5.1 on the default is
// "none", where no reasoning tokens are spent and temperature is taken
// (https://platform.openai.com/docs/guides/latest-model, parameter
// compatibility; tmc/langchaingo#1497 for gpt-5.4), though max_tokens is
// still refused (fish2018/YPrompt#26, gpt-5.1).
func reasonsByDefault(model string) bool {
	if !reasoningModel(model) {
		return false
	}
	rest, ok := strings.CutPrefix(model, "gpt-5")
	return !ok || rest == "" || strings.HasPrefix(rest, "-")
}

// errorBody is OpenAI's error object: {"error": {message, type, param,
// code}}.
func errorBody(message, typ string, param, code any) map[string]any {
	var t any
	if typ != "" {
		t = typ
	}
	return map[string]any{"error": map[string]any{"message": message, "type": t, "param": param, "code": code}}
}

// refusal is OpenAI's 400 to a chat body a model does not take, or nil.
//
// max_tokens: 400 unsupported_parameter, body as reported verbatim in
// griptape-ai/ComfyUI-Griptape#312 (gpt-5), fish2018/YPrompt#26
// (gpt-5.1), teilomillet/gollm#33 (o1, o3-mini), and against
// langchain-ai/langchainjs#8641 and langgenius/dify#24307.
//
// stop on a reasoning model: 400 unsupported_parameter, body as reported
// in huggingface/smolagents#1671 (gpt-5-mini), crewAIInc/crewAI#2738
// (o3) and huggingface/smolagents#1893 (gpt-5.2). More than 4 stop
// sequences: chat completions take "Up to 4 sequences"
// (help.openai.com/en/articles/5072263), the body in OpenAI's shape for
// an array over its length.
//
// temperature or top_p other than 1 on a model that reasons: see
// samplingRefusal.
func refusal(b Body) map[string]any {
	if e := formatRefusal(b); e != nil {
		return e
	}
	if len(b.Stop) > 4 {
		return errorBody("Invalid 'stop': array too long. Expected an array with maximum length 4, but got an array with length "+
			strconv.Itoa(len(b.Stop))+" instead.", "invalid_request_error", "stop", "array_above_max_length")
	}
	if !reasoningModel(b.Model) {
		return effortRefusal(b)
	}
	if b.MaxTokens != nil {
		return errorBody("Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens' instead.",
			"invalid_request_error", "max_tokens", "unsupported_parameter")
	}
	if b.Stop != nil {
		return errorBody("Unsupported parameter: 'stop' is not supported with this model.",
			"invalid_request_error", "stop", "unsupported_parameter")
	}
	return samplingRefusal(b)
}

// effortRefusal is OpenAI's 400 to a reasoning effort asked of a model
// that does not reason ("reasoning_effort ... o-series models only",
// platform.openai.com/docs/api-reference/chat/create; an unsupported
// parameter answered as max_tokens is), or nil.
func effortRefusal(b Body) map[string]any {
	if b.ReasoningEffort == "" || reasoningModel(b.Model) {
		return nil
	}
	return errorBody("Unsupported parameter: 'reasoning_effort' is not supported with this model.",
		"invalid_request_error", "reasoning_effort", "unsupported_parameter")
}

// samplingRefusal is OpenAI's 400 to a temperature or top_p other than 1
// on a model while it reasons, on the chat and the Responses API alike,
// or nil: by default on the o-series and the first gpt-5 family, and
// from gpt-5.1 on when an effort other than "none" is asked
// (platform.openai.com/docs/guides/latest-model: temperature and top_p
// only at effort none). Bodies as reported in gabrii/Cursor-Azure-GPT-5#33
// and vercel/ai#6034 (gpt-5), QwenLM/qwen-code#921 (gpt-5-mini),
// OpenHands/OpenHands#4131 (o1-mini).
func samplingRefusal(b Body) map[string]any {
	if m := effortRefusal(b); m != nil {
		return m
	}
	asked := reasoningModel(b.Model) && b.ReasoningEffort != "" && b.ReasoningEffort != "none"
	if !reasonsByDefault(b.Model) && !asked {
		return nil
	}
	for _, p := range []struct {
		name string
		v    *float64
	}{{"temperature", b.Temperature}, {"top_p", b.TopP}} {
		if p.v != nil && *p.v != 1 {
			return errorBody("Unsupported value: '"+p.name+"' does not support "+fmtFloat(*p.v)+
				" with this model. Only the default (1) value is supported.", "invalid_request_error", p.name, "unsupported_value")
		}
	}
	return nil
}

// flexRefusal is the flex pool's answer when it has no capacity. OpenAI's
// flex processing guide
// (https://platform.openai.com/docs/guides/flex-processing, "Resource
// unavailable errors") documents it as "429 Resource Unavailable", not
// charged; it prints no body, so the body here is our reading of those
// words in OpenAI's error shape (code resource_unavailable), the same as
// testdata/errors/429_resource_unavailable.json.
func flexRefusal(w http.ResponseWriter) {
	w.Header().Set("Retry-After", "1")
	writeJSON(w, http.StatusTooManyRequests, errorBody(
		"Resource unavailable: there is not enough flex capacity to serve this request now. Please retry later or use the default service tier.",
		"", nil, "resource_unavailable"))
}

// servedTier is the service_tier OpenAI answers for a request's: every
// answer, whole, streamed (each chunk) or a response object, names the
// tier that served it. "default" is the standard tier; a priority request
// past the ramp rate limit is served at standard and answers "default"
// (https://platform.openai.com/docs/guides/priority-processing, "Ramp
// rate limit"), which downgrade asks for.
func servedTier(asked string, downgrade bool) string {
	switch asked {
	case "flex":
		return "flex"
	case "priority":
		if downgrade {
			return "default"
		}
		return "priority"
	}
	return "default"
}

func fmtFloat(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }
