package anthropic_test

import (
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/aijobs/aijobs/pkg/model"
	"github.com/aijobs/aijobs/pkg/model/anthropic"
	"github.com/aijobs/aijobs/pkg/model/modeltest"
)

// This file is the Messages API's wire format as the tests' servers write
// it, and the conformance suite's adapter built on it.

const (
	apiKey = "sk-ant-test-SECRET-key"
	// reqID is the request-id header the fake server sends.
	reqID = "req_011CTestHeader0000000001"
	// answerModel is the model the answers below name.
	answerModel = "claude-sonnet-4-5-20250929"
)

// The events of a streamed answer, as the Messages API sends them.
const (
	blockStart  = `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`
	ping        = `{"type": "ping"}`
	blockStop   = `{"type":"content_block_stop","index":0}`
	messageStop = `{"type":"message_stop"}`
)

// messageStart opens a stream; it counts the prompt, and one output token.
func messageStart(input int64) string {
	return fmt.Sprintf(`{"type":"message_start","message":{"id":"msg_01XFDUDYJgAACzvnptvVoYEL","type":"message","role":"assistant","content":[],"model":%q,"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":%d,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":1}}}`, answerModel, input)
}

func textDelta(s string) string {
	b, _ := json.Marshal(s)
	return fmt.Sprintf(`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":%s}}`, b)
}

func messageDelta(reason string, outputTokens int) string {
	return fmt.Sprintf(`{"type":"message_delta","delta":{"stop_reason":%q,"stop_sequence":null},"usage":{"output_tokens":%d}}`, reason, outputTokens)
}

func errorEvent(typ, message string) string {
	return fmt.Sprintf(`{"type":"error","error":{"type":%q,"message":%q}}`, typ, message)
}

// sse writes one server-sent event, named by its type, and flushes it.
func sse(w http.ResponseWriter, data string) {
	var ev struct{ Type string }
	_ = json.Unmarshal([]byte(data), &ev)
	fmt.Fprintf(w, "event: %s\ndata: %s\n\n", ev.Type, data)
	w.(http.Flusher).Flush()
}

// streamAnswer writes a whole streamed answer of chunks.
func streamAnswer(w http.ResponseWriter, reason string, outputTokens int, chunks ...string) {
	w.Header().Set("Content-Type", "text/event-stream")
	sse(w, messageStart(25))
	sse(w, blockStart)
	for _, c := range chunks {
		sse(w, textDelta(c))
	}
	sse(w, blockStop)
	sse(w, messageDelta(reason, outputTokens))
	sse(w, messageStop)
}

// message is a whole answer of the texts, one block each, after a thinking
// block that is not part of it; u is its usage (nil: none, as a compatible
// proxy may send it). It names no service_tier, as an older server or a
// proxy answers: the conformance suite's answer names no lane (the tier
// read back is held by TestSamples and TestAgainstTheFake).
func message(reason string, u *model.Usage, texts ...string) string {
	usage := ""
	if u != nil {
		usage = fmt.Sprintf(`,"usage":{"input_tokens":%d,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":%d}`,
			u.InputTokens, u.OutputTokens)
	}
	content := `{"type":"thinking","thinking":"not part of the answer","signature":"c2ln"}`
	for _, s := range texts {
		b, _ := json.Marshal(s)
		content += `,{"type":"text","text":` + string(b) + `}`
	}
	return fmt.Sprintf(`{"id":"msg_013Zva2CMHLNnXjNJJKqJ2EF","type":"message","role":"assistant","model":%q,`+
		`"content":[%s],"stop_reason":%q,"stop_sequence":null%s}`, answerModel, content, reason, usage)
}

// wire is the suite's adapter.
func wire() modeltest.Wire {
	return modeltest.Wire{
		New: func(url string, stream bool, hc modeltest.Doer) (model.Provider, error) {
			return anthropic.New(anthropic.Config{BaseURL: url, APIKey: apiKey, Model: "cfg-model", Stream: stream, HTTPClient: hc})
		},
		Secret: apiKey, Model: answerModel, Stop: "end_turn", StreamType: "text/event-stream",
		// message_start counts the prompt: a stream cut short bills it.
		StartsWithInput: true,
		Answer: func(w http.ResponseWriter, text string, u *model.Usage) {
			fmt.Fprint(w, message("end_turn", u, text[:len(text)/2], text[len(text)/2:]))
		},
		StreamStart: func(w http.ResponseWriter, input int64) {
			sse(w, messageStart(input))
			sse(w, blockStart)
			sse(w, ping)
			fmt.Fprint(w, ": a comment\n\n")
		},
		Delta:  func(w http.ResponseWriter, text string) { sse(w, textDelta(text)) },
		Counts: func(w http.ResponseWriter, u model.Usage) { sse(w, messageDelta("end_turn", int(u.OutputTokens))) },
		StreamEnd: func(w http.ResponseWriter, u *model.Usage) {
			sse(w, blockStop)
			if u != nil {
				sse(w, messageDelta("end_turn", int(u.OutputTokens)))
			} else { // a proxy that drops the final count
				sse(w, `{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null}}`)
			}
			sse(w, messageStop)
		},
		StreamError: func(w http.ResponseWriter, message string) { sse(w, errorEvent("overloaded_error", message)) },
		Refuse: func(w http.ResponseWriter, message string) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprintf(w, `{"type":"error","error":{"type":"invalid_request_error","message":%q},"request_id":"req_011CSHoEeqs5C35K2UUqR7Fy"}`, message)
		},
	}
}
