package model_test

import (
	"testing"

	"github.com/aijobs/aijobs/pkg/job"
	"github.com/aijobs/aijobs/pkg/model"
)

// ceiling is job.PromptCeiling of request(): (29+1)/2 bytes + 8 for the
// one message.
const ceiling = 23

func request(maxTokens int) model.Request {
	return model.Request{Messages: []job.Message{{Role: "user", Content: "SECRET-PROMPT tell me a story"}}, MaxTokens: maxTokens}
}

func TestEstimates(t *testing.T) {
	if got := job.PromptCeiling(request(0).Messages); got != ceiling {
		t.Fatalf("PromptCeiling = %d, want %d", got, ceiling)
	}
	tests := []struct {
		name string
		got  model.Usage
		want model.Usage
	}{
		{"unanswered call: the worst case", model.Unanswered(request(300), false),
			model.Usage{InputTokens: ceiling, OutputTokens: 300, Estimated: true}},
		{"unanswered stream: the prompt", model.Unanswered(request(300), true),
			model.Usage{InputTokens: ceiling, Estimated: true}},
		{"unreported answer: two bytes a token", model.Unreported(request(300), "0123456789"),
			model.Usage{InputTokens: ceiling, OutputTokens: 5, Estimated: true}},
		{"unreported answer: never over max tokens", model.Unreported(request(3), "0123456789"),
			model.Usage{InputTokens: ceiling, OutputTokens: 3, Estimated: true}},
		{"stream cut before any count", model.StreamUsage(request(300), 0, 4, 0, false),
			model.Usage{InputTokens: ceiling, OutputTokens: 4, Estimated: true}},
		{"stream cut after the server's prompt count", model.StreamUsage(request(300), 25, 4, 1, false),
			model.Usage{InputTokens: 25, OutputTokens: 4, Estimated: true}},
		{"stream cut after the server's final count", model.StreamUsage(request(300), 25, 4, 9, true),
			model.Usage{InputTokens: 25, OutputTokens: 9}},
		{"deltas above the server's final count", model.StreamUsage(request(300), 25, 4, 2, true),
			model.Usage{InputTokens: 25, OutputTokens: 4}},
		{"final output count without a prompt count", model.StreamUsage(request(300), 0, 4, 9, true),
			model.Usage{InputTokens: ceiling, OutputTokens: 9, Estimated: true}},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("%s: got %+v, want %+v", tt.name, tt.got, tt.want)
		}
	}
}

// A reasoning model bills reasoning tokens as output that no delta and no
// answer text shows: a call of one (reasoning by default, or asked to by
// the job's reasoning option) whose counts never came is estimated at
// every output token it asked for, streamed or not, cut early or
// answered without counts; another model's estimates are unchanged.
func TestAReasoningModelsLostCountsAreEstimatedAtItsWholeCap(t *testing.T) {
	r := model.Request{Messages: []job.Message{{Role: "user", Content: "think hard"}}, MaxTokens: 500}
	for _, asked := range []bool{false, true} {
		thinker := r
		if asked { // a model asked to reason (an effort, a thinking budget)
			thinker.Options.Reasoning = &job.Reasoning{BudgetTokens: 1024}
		} else { // a model that reasons by default
			thinker.Reasons = true
		}
		reasonerEstimates(t, r, thinker)
	}
}

func reasonerEstimates(t *testing.T, r, thinker model.Request) {
	t.Helper()
	for _, c := range []struct {
		name       string
		plain, got model.Usage
	}{
		{"a stream that heard nothing", model.Unanswered(r, true), model.Unanswered(thinker, true)},
		{"a stream cut after 3 deltas", model.StreamUsage(r, 0, 3, 0, false), model.StreamUsage(thinker, 0, 3, 0, false)},
		{"an answer without counts", model.Unreported(r, "ok"), model.Unreported(thinker, "ok")},
	} {
		if c.got.OutputTokens != 500 || !c.got.Estimated {
			t.Errorf("%s: a reasoning model estimated %+v, want 500 output tokens, estimated", c.name, c.got)
		}
		if c.plain.OutputTokens >= 500 {
			t.Errorf("%s: another model estimated %+v: its estimate should not change", c.name, c.plain)
		}
	}
	if u := model.StreamUsage(thinker, 10, 3, 40, true); u.OutputTokens != 40 || u.Estimated {
		t.Errorf("a stream whose counts came: %+v, want the server's 40", u)
	}
}
