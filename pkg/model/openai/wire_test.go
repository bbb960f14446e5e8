package openai_test

import (
	"fmt"
	"net/http"

	"github.com/aijobs/aijobs/pkg/model"
	"github.com/aijobs/aijobs/pkg/model/modeltest"
	"github.com/aijobs/aijobs/pkg/model/openai"
)

// This file is the OpenAI-compatible wire format as the tests' servers
// write it, and the conformance suite's adapter built on it.

const (
	apiKey = "sk-test-SECRET-key"
	// answerModel is the model the answers below name.
	answerModel = "gpt-4o-mini-2024-07-18"
)

// sse writes one server-sent event and flushes it to the client.
func sse(w http.ResponseWriter, data string) {
	fmt.Fprintf(w, "data: %s\n\n", data)
	w.(http.Flusher).Flush()
}

const roleChunk = `{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1700000000,"model":"` + answerModel + `","choices":[{"index":0,"delta":{"role":"assistant","content":"","refusal":null},"logprobs":null,"finish_reason":null}],"usage":null}`

func contentChunk(s string) string {
	return fmt.Sprintf(`{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1700000000,"model":%q,"choices":[{"index":0,"delta":{"content":%q},"logprobs":null,"finish_reason":null}],"usage":null}`, answerModel, s)
}

func finishChunk(reason string) string {
	return fmt.Sprintf(`{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1700000000,"model":%q,"choices":[{"index":0,"delta":{},"logprobs":null,"finish_reason":%q}],"usage":null}`, answerModel, reason)
}

// usageChunk is the last chunk stream_options.include_usage asks for.
func usageChunk(u model.Usage) string {
	return fmt.Sprintf(`{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1700000000,"model":%q,"choices":[],"usage":%s}`, answerModel, usageJSON(u))
}

func usageJSON(u model.Usage) string {
	return fmt.Sprintf(`{"prompt_tokens":%d,"completion_tokens":%d,"total_tokens":%d,`+
		`"prompt_tokens_details":{"cached_tokens":0},"completion_tokens_details":{"reasoning_tokens":0}}`,
		u.InputTokens, u.OutputTokens, u.InputTokens+u.OutputTokens)
}

// completion is a whole answer of text; u is its usage (nil: none, as a
// compatible server may send it).
func completion(text, reason string, u *model.Usage) string {
	usage := ""
	if u != nil {
		usage = `,"usage":` + usageJSON(*u)
	}
	return fmt.Sprintf(`{"id":"chatcmpl-abc123","object":"chat.completion","created":1700000000,"model":%q,`+
		`"choices":[{"index":0,"message":{"role":"assistant","content":%q,"refusal":null},"logprobs":null,"finish_reason":%q}]%s,`+
		`"system_fingerprint":"fp_0123456789"}`, answerModel, text, reason, usage)
}

// errorJSON is an error object, as an error answer's body or a stream's
// chunk carries it.
func errorJSON(message, typ string) string {
	return fmt.Sprintf(`{"error":{"message":%q,"type":%q,"param":null,"code":null}}`, message, typ)
}

// wire is the suite's adapter.
func wire() modeltest.Wire {
	return modeltest.Wire{
		New: func(url string, stream bool, hc modeltest.Doer) (model.Provider, error) {
			return openai.New(openai.Config{BaseURL: url, APIKey: apiKey, Model: "cfg-model", Stream: stream, HTTPClient: hc})
		},
		Secret: apiKey, Model: answerModel, Stop: "stop", StreamType: "text/event-stream",
		Answer: func(w http.ResponseWriter, text string, u *model.Usage) { fmt.Fprint(w, completion(text, "stop", u)) },
		StreamStart: func(w http.ResponseWriter, _ int64) {
			fmt.Fprint(w, ": keep-alive\n\n")
			sse(w, roleChunk)
		},
		Delta:  func(w http.ResponseWriter, text string) { sse(w, contentChunk(text)) },
		Counts: func(w http.ResponseWriter, u model.Usage) { sse(w, usageChunk(u)) },
		StreamEnd: func(w http.ResponseWriter, u *model.Usage) {
			sse(w, finishChunk("stop"))
			if u != nil {
				sse(w, usageChunk(*u))
			}
			sse(w, "[DONE]")
		},
		StreamError: func(w http.ResponseWriter, message string) { sse(w, errorJSON(message, "server_error")) },
		Refuse: func(w http.ResponseWriter, message string) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprint(w, errorJSON(message, "invalid_request_error"))
		},
	}
}
