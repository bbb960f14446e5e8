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

// refusal is OpenAI's 400 to a chat body a reasoning model does not take,
// or nil.
//
// max_tokens: 400 unsupported_parameter, body as reported verbatim in
// griptape-ai/ComfyUI-Griptape#312 (gpt-5), fish2018/YPrompt#26
// (gpt-5.1), teilomillet/gollm#33 (o1, o3-mini), and against
// langchain-ai/langchainjs#8641 and langgenius/dify#24307.
//
// temperature other than 1: 400 unsupported_value, body as reported in
// gabrii/Cursor-Azure-GPT-5#33 and vercel/ai#6034 (gpt-5),
// QwenLM/qwen-code#921 (gpt-5-mini), OpenHands/OpenHands#4131 (o1-mini).
func refusal(b Body) map[string]any {
	if !reasoningModel(b.Model) {
		return nil
	}
	if b.MaxTokens != nil {
		return errorBody("Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens' instead.",
			"invalid_request_error", "max_tokens", "unsupported_parameter")
	}
	return temperatureRefusal(b)
}

// temperatureRefusal is OpenAI's 400 to a temperature other than 1 on a
// model that reasons by default, on the chat and the Responses API alike
// (same sources as refusal), or nil.
func temperatureRefusal(b Body) map[string]any {
	if reasonsByDefault(b.Model) && b.Temperature != nil && *b.Temperature != 1 {
		return errorBody("Unsupported value: 'temperature' does not support "+fmtFloat(*b.Temperature)+
			" with this model. Only the default (1) value is supported.", "invalid_request_error", "temperature", "unsupported_value")
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
