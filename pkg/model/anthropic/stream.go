package anthropic

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/aijobs/aijobs/pkg/job"
	"github.com/aijobs/aijobs/pkg/model"
)

// streamEvent is the data of one server-sent event. Its type field names
// the event (the SSE event: line says the same and is not needed):
// message_start, content_block_start, content_block_delta,
// content_block_stop, message_delta, message_stop, ping and error.
type streamEvent struct {
	Type    string `json:"type"`
	Message *struct {
		Model string `json:"model"`
		Usage *usage `json:"usage"`
	} `json:"message"`
	// Delta is a content block's delta (type, text) or, in message_delta,
	// the message's (stop_reason).
	Delta struct {
		Type       string `json:"type"`
		Text       string `json:"text"`
		StopReason string `json:"stop_reason"`
		// PartialJSON is an input_json_delta's piece of a tool_use
		// block's input: a forced tool's answer (schema.go).
		PartialJSON string `json:"partial_json"`
	} `json:"delta"`
	// Usage is message_delta's usage: cumulative, not an increment.
	Usage *usage     `json:"usage"`
	Error *errorBody `json:"error"`
}

// streamState is what a stream has told so far.
type streamState struct {
	r        model.Request
	out      strings.Builder
	name     string
	reason   string
	input    usage  // the prompt's counts, once message_start said them
	tier     string // the usage's service_tier, once said
	deltas   int64  // content block deltas received
	server   int64  // the server's latest cumulative output count
	final    bool   // message_delta gave server its final value
	reported int    // the last progress reported
	done     bool   // message_stop arrived
}

// readStream consumes server-sent events until message_stop: text deltas
// build the output, and every delta counts one token for progress until
// message_delta gives the server's count. A stream cut short or failed
// still reports the tokens seen so far, so the attempt is paid for: the
// server's counts where it sent them, estimated where it did not.
func readStream(ctx context.Context, body io.Reader, r model.Request, reqID string) (model.Response, error) {
	st := &streamState{r: r}
	sc := bufio.NewScanner(body)
	sc.Buffer(make([]byte, 0, 4<<10), 1<<20)
	var data []byte
	var ev streamEvent
	for !st.done {
		more := sc.Scan()
		line := sc.Bytes()
		if more && len(line) > 0 {
			if v, ok := bytes.CutPrefix(line, []byte("data:")); ok {
				if len(data) > 0 {
					data = append(data, '\n')
				}
				data = append(data, bytes.TrimPrefix(v, []byte(" "))...)
			}
			continue // event:, id:, retry: and comments say nothing the data does not
		}
		// A blank line ends an event; so does a clean end of the body.
		if len(data) > 0 {
			ev = streamEvent{}
			if err := json.Unmarshal(data, &ev); err != nil {
				return model.Response{}, &model.Error{Class: job.ProviderError, Detail: appendToken("anthropic: unparseable stream event", reqID),
					Usage: st.seen(), Err: fmt.Errorf("anthropic: decode stream event: %w", err)}
			}
			data = data[:0]
			if e := st.apply(&ev, reqID); e != nil {
				return model.Response{}, e
			}
		}
		if !more {
			break
		}
	}
	if err := sc.Err(); errors.Is(err, bufio.ErrTooLong) {
		return model.Response{}, &model.Error{Class: job.ProviderError, Detail: appendToken("anthropic: stream event too large", reqID),
			Usage: st.seen(), Err: fmt.Errorf("anthropic: read stream: %w", err)}
	}
	if err := sc.Err(); err != nil || !st.done {
		if err == nil {
			err = io.ErrUnexpectedEOF
		}
		return model.Response{}, transportError(ctx, err, reqID, st.seen())
	}
	u := st.seen()
	if st.final {
		u.OutputTokens = st.server
	}
	name := st.name
	if name == "" {
		name = r.Model
	}
	return servedBy(st.tier)(finish(st.out.String(), name, st.reason, reqID, u))
}

// apply folds one event into the state; an error event ends the stream.
func (st *streamState) apply(ev *streamEvent, reqID string) *model.Error {
	switch ev.Type {
	case "message_start":
		if ev.Message != nil {
			st.name = ev.Message.Model
			if u := ev.Message.Usage; u != nil {
				st.prompt(*u)
				st.server = u.OutputTokens
			}
		}
	case "content_block_delta":
		st.deltas++
		switch ev.Delta.Type {
		case "text_delta":
			st.out.WriteString(ev.Delta.Text)
		case "input_json_delta":
			st.out.WriteString(ev.Delta.PartialJSON)
		}
		st.report(st.deltas)
	case "message_delta":
		if ev.Delta.StopReason != "" {
			st.reason = ev.Delta.StopReason
		}
		if u := ev.Usage; u != nil {
			st.prompt(*u) // newer servers repeat the input counts here
			st.server, st.final = u.OutputTokens, true
			st.report(st.server)
		}
	case "message_stop":
		st.done = true
	case "error":
		var b errorBody
		if ev.Error != nil {
			b = *ev.Error
		}
		e := bodyError("stream", 200, reqID, b)
		e.Usage = st.seen()
		return e
	}
	return nil
}

// prompt folds in the input counts and tier of a usage: message_start's,
// then message_delta's, whose counts are cumulative ("Streaming
// Messages", https://docs.anthropic.com/en/docs/build-with-claude/streaming)
// and may leave out what it does not repeat, so each count only grows.
func (st *streamState) prompt(u usage) {
	st.input.InputTokens = max(st.input.InputTokens, u.InputTokens)
	st.input.CacheReadInputTokens = max(st.input.CacheReadInputTokens, u.CacheReadInputTokens)
	st.input.CacheCreationInputTokens = max(st.input.CacheCreationInputTokens, u.CacheCreationInputTokens)
	if u.ServiceTier != "" {
		st.tier = u.ServiceTier
	}
}

// report tells progress the output count, never going backwards.
func (st *streamState) report(n int64) {
	if int(n) <= st.reported {
		return
	}
	st.reported = int(n)
	if st.r.Progress != nil {
		st.r.Progress(st.reported)
	}
}

// seen is the usage so far (model.StreamUsage): the prompt count of
// message_start, and the larger of the deltas received and the server's
// latest count, so a cut stream is never billed less than what arrived;
// estimated until message_delta gave the final count.
func (st *streamState) seen() model.Usage {
	u := model.StreamUsage(st.r, st.input.input(), st.deltas, st.server, st.final)
	if st.input.input() > 0 { // else the prompt is estimated whole, uncached
		u.CachedInputTokens, u.CacheWriteTokens = st.input.CacheReadInputTokens, st.input.CacheCreationInputTokens
	}
	return u
}
