package openai

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/aijobs/aijobs/pkg/job"
	"github.com/aijobs/aijobs/pkg/model"
)

type chunk struct {
	Model   string `json:"model"`
	Choices []struct {
		Delta struct {
			Content string `json:"content"`
		} `json:"delta"`
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
	Usage *usage     `json:"usage"`
	Error *errorBody `json:"error"`
}

// readStream consumes server-sent events until [DONE]: content deltas build
// the output and drive progress (one token per content chunk until the
// final usage chunk gives the real counts). A stream cut short still
// reports the tokens seen so far, so the attempt is paid for.
func readStream(ctx context.Context, body io.Reader, r model.Request, prompt int64) (model.Response, error) {
	var out strings.Builder
	var name, reason string
	var u *usage
	chunks := int64(0)
	sc := bufio.NewScanner(body)
	sc.Buffer(make([]byte, 0, 4<<10), 1<<20)
	done := false
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "data:") {
			continue
		}
		data := strings.TrimSpace(strings.TrimPrefix(line, "data:"))
		if data == "[DONE]" {
			done = true
			break
		}
		var ch chunk
		if err := json.Unmarshal([]byte(data), &ch); err != nil {
			return model.Response{}, &model.Error{Class: job.ProviderError, Detail: "openai: unparseable stream chunk",
				Usage: model.Usage{InputTokens: prompt, OutputTokens: chunks},
				Err:   fmt.Errorf("openai: decode stream chunk: %w", err)}
		}
		if ch.Error != nil {
			e := bodyError(200, *ch.Error)
			if e.Class == job.Internal { // the server itself failed mid-answer
				e.Class = job.ProviderError
			}
			e.Usage = model.Usage{InputTokens: prompt, OutputTokens: chunks}
			return model.Response{}, e
		}
		if ch.Model != "" {
			name = ch.Model
		}
		if ch.Usage != nil {
			u = ch.Usage
		}
		for _, choice := range ch.Choices {
			if choice.Delta.Content != "" {
				out.WriteString(choice.Delta.Content)
				chunks++
				if r.Progress != nil {
					r.Progress(int(chunks))
				}
			}
			if choice.FinishReason != nil {
				reason = *choice.FinishReason
			}
		}
	}
	if err := sc.Err(); err != nil || !done {
		if err == nil {
			err = io.ErrUnexpectedEOF
		}
		if u != nil { // the usage chunk arrived before the cut: bill what the server counted
			return model.Response{}, transportError(ctx, err, u.PromptTokens, u.CompletionTokens)
		}
		return model.Response{}, transportError(ctx, err, prompt, chunks)
	}
	final := usage{PromptTokens: prompt, CompletionTokens: chunks}
	if u != nil {
		final = *u
	}
	if r.Progress != nil {
		r.Progress(int(final.CompletionTokens))
	}
	if name == "" {
		name = r.Model
	}
	return finish(out.String(), name, reason, final)
}
