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

// streamed is what a stream said so far: the output, its model, finish
// reason and tier, the usage chunk if it came, and how many content
// chunks arrived.
type streamed struct {
	r                  model.Request
	out                strings.Builder
	name, reason, tier string
	u                  *usage
	chunks             int64
}

// seen is what a stream cut now is billed: the server's counts if its
// usage chunk arrived (and so did their parts, billed as a whole
// stream's are), else estimated (model.StreamUsage).
func (s *streamed) seen() model.Usage {
	if s.u == nil {
		return model.StreamUsage(s.r, 0, s.chunks, 0, false)
	}
	su := model.StreamUsage(s.r, s.u.PromptTokens, s.chunks, s.u.CompletionTokens, true)
	su.CachedInputTokens = s.u.PromptTokensDetails.CachedTokens
	su.ReasoningTokens = s.u.CompletionTokensDetails.ReasoningTokens
	return su
}

// add takes in one chunk: its content drives progress, one token a
// content chunk until the usage chunk gives the real counts.
func (s *streamed) add(ch chunk) {
	if ch.Model != "" {
		s.name = ch.Model
	}
	if ch.ServiceTier != "" {
		s.tier = ch.ServiceTier
	}
	if ch.Usage != nil {
		s.u = ch.Usage
	}
	for _, choice := range ch.Choices {
		if choice.Delta.Content != "" {
			s.out.WriteString(choice.Delta.Content)
			s.chunks++
			if s.r.Progress != nil {
				s.r.Progress(int(s.chunks))
			}
		}
		if choice.FinishReason != nil {
			s.reason = *choice.FinishReason
		}
	}
}

// readStream consumes server-sent events until [DONE]. A stream cut
// short still reports the tokens seen so far, so the attempt is paid
// for (streamed.seen).
func readStream(ctx context.Context, body io.Reader, r model.Request) (model.Response, error) {
	s := &streamed{r: r}
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
				Usage: s.seen(), Err: fmt.Errorf("openai: decode stream chunk: %w", err)}
		}
		if ch.Error != nil {
			e := bodyError(200, *ch.Error)
			if e.Class == job.Internal { // the server itself failed mid-answer
				e.Class = job.ProviderError
			}
			e.Usage = s.seen()
			return model.Response{}, e
		}
		s.add(ch)
	}
	if err := sc.Err(); err != nil || !done {
		if err == nil {
			err = io.ErrUnexpectedEOF
		}
		return model.Response{}, transportError(ctx, err, s.seen())
	}
	return s.finish()
}

// finish is a whole stream's answer.
func (s *streamed) finish() (model.Response, error) {
	final := s.seen()
	if s.u != nil {
		final = s.u.billed()
	}
	if s.r.Progress != nil && final.OutputTokens > s.chunks { // never back
		s.r.Progress(int(final.OutputTokens))
	}
	name := s.name
	if name == "" {
		name = s.r.Model
	}
	resp, err := finish(s.out.String(), name, s.reason, final)
	resp.Served = served(s.tier)
	return resp, err
}
