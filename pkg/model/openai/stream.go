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
	Model string `json:"model"`
	// ServiceTier is on every chunk: the tier serving the stream.
	ServiceTier string `json:"service_tier"`
	Choices     []struct {
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
// reports the tokens seen so far, so the attempt is paid for: the server's
// counts if its usage chunk arrived, else estimated (model.StreamUsage).
func readStream(ctx context.Context, body io.Reader, r model.Request) (model.Response, error) {
	var out strings.Builder
	var name, reason, tier string
	var u *usage
	chunks := int64(0)
	seen := func() model.Usage {
		if u != nil {
			// The counts came: so did their parts, which a cut
			// stream is billed for as a whole one is.
			su := model.StreamUsage(r, u.PromptTokens, chunks, u.CompletionTokens, true)
			su.CachedInputTokens = u.PromptTokensDetails.CachedTokens
			su.ReasoningTokens = u.CompletionTokensDetails.ReasoningTokens
			return su
		}
		return model.StreamUsage(r, 0, chunks, 0, false)
	}
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
				Usage: seen(),
				Err:   fmt.Errorf("openai: decode stream chunk: %w", err)}
		}
		if ch.Error != nil {
			e := bodyError(200, *ch.Error)
			if e.Class == job.Internal { // the server itself failed mid-answer
				e.Class = job.ProviderError
			}
			e.Usage = seen()
			return model.Response{}, e
		}
		if ch.Model != "" {
			name = ch.Model
		}
		if ch.ServiceTier != "" {
			tier = ch.ServiceTier
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
		return model.Response{}, transportError(ctx, err, seen())
	}
	final := seen()
	if u != nil {
		final = u.billed()
	}
	if r.Progress != nil && final.OutputTokens > chunks { // never back
		r.Progress(int(final.OutputTokens))
	}
	if name == "" {
		name = r.Model
	}
	resp, err := finish(out.String(), name, reason, final)
	resp.Served = served(tier)
	return resp, err
}
