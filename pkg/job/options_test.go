package job_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/aijobs/aijobs/pkg/job"
)

func float(v float64) *float64 { return &v }

// The options' own bounds hold whatever rung is reached: each refusal is
// an invalid_request naming the option.
func TestCheckInputHoldsTheOptionsToTheirBounds(t *testing.T) {
	l := job.Limits{MaxMessages: 3, DefaultMaxTokens: 2048, MaxMaxTokens: 32_768}
	user := []job.Message{{Role: "user", Content: "x"}}
	seed := int64(-7)
	for _, tt := range []struct {
		name  string
		o     job.Options
		field string // "" means accepted
	}{
		{"top_p 0", job.Options{TopP: float(0)}, ""},
		{"top_p 1", job.Options{TopP: float(1)}, ""},
		{"four stop sequences", job.Options{Stop: []string{"a", "b", "c", strings.Repeat("d", job.MaxStopBytes)}}, ""},
		{"any seed", job.Options{Seed: &seed}, ""},
		{"an effort", job.Options{Reasoning: &job.Reasoning{Effort: "high"}}, ""},
		{"a budget below the default max_tokens", job.Options{Reasoning: &job.Reasoning{BudgetTokens: 1024}}, ""},
		{"both", job.Options{Reasoning: &job.Reasoning{Effort: "low", BudgetTokens: 2047}}, ""},
		{"top_p negative", job.Options{TopP: float(-0.01)}, "input.top_p"},
		{"top_p above 1", job.Options{TopP: float(1.01)}, "input.top_p"},
		{"no stop sequence", job.Options{Stop: []string{}}, "input.stop"},
		{"five stop sequences", job.Options{Stop: []string{"a", "b", "c", "d", "e"}}, "input.stop"},
		{"an empty stop sequence", job.Options{Stop: []string{"a", ""}}, "input.stop[1]"},
		{"a long stop sequence", job.Options{Stop: []string{strings.Repeat("d", job.MaxStopBytes+1)}}, "input.stop[0]"},
		{"an empty reasoning", job.Options{Reasoning: &job.Reasoning{}}, "input.reasoning"},
		{"an unknown effort", job.Options{Reasoning: &job.Reasoning{Effort: "xhigh"}}, "input.reasoning.effort"},
		{"a budget below Anthropic's floor", job.Options{Reasoning: &job.Reasoning{BudgetTokens: 1023}}, "input.reasoning.budget_tokens"},
		{"a budget at max_tokens", job.Options{Reasoning: &job.Reasoning{BudgetTokens: 2048}}, "input.reasoning.budget_tokens"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			in := job.Input{Messages: user, Options: tt.o}
			err := l.CheckInput(&in)
			if tt.field == "" {
				if err != nil {
					t.Fatalf("CheckInput: %v", err)
				}
				return
			}
			var e *job.Error
			if !errors.As(err, &e) || e.Code != job.CodeInvalidRequest || e.Field != tt.field {
				t.Fatalf("CheckInput = %v, want invalid_request on %s", err, tt.field)
			}
		})
	}
}

// The options are the input's own members, as a caller writes them, and
// read back whole: the record carries them to the worker unchanged.
func TestTheOptionsAreTheInputsOwnMembers(t *testing.T) {
	seed := int64(42)
	in := job.Input{Messages: []job.Message{{Role: "user", Content: "x"}}, MaxTokens: 4096,
		Options: job.Options{TopP: float(0.5), Stop: []string{"END"}, Seed: &seed, Reasoning: &job.Reasoning{Effort: "low", BudgetTokens: 2048}}}
	b, err := job.EncodeJSON(in)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"messages":[{"role":"user","content":"x"}],"max_tokens":4096,"top_p":0.5,"stop":["END"],"seed":42,"reasoning":{"effort":"low","budget_tokens":2048}}`
	if string(b) != want {
		t.Fatalf("encoded\n %s\nwant\n %s", b, want)
	}
	var back job.Input
	if err := json.Unmarshal(b, &back); err != nil || *back.TopP != 0.5 || back.Stop[0] != "END" || *back.Seed != 42 || *back.Reasoning != *in.Reasoning {
		t.Fatalf("read back %+v (%v)", back, err)
	}
}

// Each family rule refuses the option it names, on the rung that cannot
// honour it, with the rung named; what the rung takes passes.
func TestCheckOptionsRefusesWhatARungCannotHonour(t *testing.T) {
	chat := job.Takes{TopP: true, Stop: true, Seed: true}
	reasoning := job.Takes{TopP: true, Seed: true, Effort: true, ReasoningTopP: 1}
	claude := job.Takes{TopP: true, Stop: true, Budget: true, TemperatureOrTopP: true, ReasoningTopP: 0.95}
	rung := func(model string, t job.Takes, fixed bool) job.Rung {
		return job.Rung{Provider: "p", Model: model, Timeout: time.Minute, Takes: t, FixedTemperature: fixed}
	}
	seed := int64(1)
	effort := &job.Reasoning{Effort: "high"}
	budget := &job.Reasoning{BudgetTokens: 2000}
	in := func(temp, topP *float64, o job.Options) job.Input {
		o.TopP = topP
		return job.Input{Messages: []job.Message{{Role: "user", Content: "x"}}, MaxTokens: 4096, Temperature: temp, Options: o}
	}
	for _, tt := range []struct {
		name  string
		g     job.Rung
		in    job.Input
		field string
	}{
		{"chat takes top_p, stop and seed", rung("gpt-4o", chat, false), in(float(0.2), float(0.9), job.Options{Stop: []string{"x"}, Seed: &seed}), ""},
		{"a reasoning model takes an effort and top_p 1", rung("o4-mini", reasoning, true), in(nil, float(1), job.Options{Reasoning: effort}), ""},
		{"claude takes top_p alone and a budget", rung("claude-sonnet-4-5", claude, false), in(nil, float(0.96), job.Options{Reasoning: budget}), ""},
		{"a rung described by nobody takes no top_p", rung("m", job.Takes{}, false), in(nil, float(0.9), job.Options{}), "input.top_p"},
		{"a reasoning model refuses top_p but 1", rung("o4-mini", reasoning, true), in(nil, float(0.9), job.Options{}), "input.top_p"},
		{"a reasoning model refuses stop", rung("gpt-5-mini", reasoning, true), in(nil, nil, job.Options{Stop: []string{"x"}}), "input.stop"},
		{"claude refuses a seed", rung("claude-sonnet-4-5", claude, false), in(nil, nil, job.Options{Seed: &seed}), "input.seed"},
		{"claude 4 refuses temperature with top_p", rung("claude-sonnet-4-5", claude, false), in(float(0.5), float(0.9), job.Options{}), "input.top_p"},
		{"chat refuses reasoning", rung("gpt-4o", chat, false), in(nil, nil, job.Options{Reasoning: effort}), "input.reasoning"},
		{"claude needs a budget", rung("claude-sonnet-4-5", claude, false), in(nil, nil, job.Options{Reasoning: effort}), "input.reasoning.budget_tokens"},
		{"openai needs an effort", rung("o3", reasoning, true), in(nil, nil, job.Options{Reasoning: budget}), "input.reasoning.effort"},
		{"a gpt-5.1 reasoning refuses temperature", rung("gpt-5.1", reasoning, false), in(float(0.5), nil, job.Options{Reasoning: effort}), "input.temperature"},
		{"thinking refuses top_p below 0.95", rung("claude-sonnet-4-5", claude, false), in(nil, float(0.9), job.Options{Reasoning: budget}), "input.top_p"},
		{"thinking refuses a temperature but 1", rung("claude-3-7-sonnet", claude, false), in(float(0.5), nil, job.Options{Reasoning: budget}), "input.temperature"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			all := job.Takes{TopP: true, Stop: true, Seed: true, Effort: true, Budget: true}
			r := job.Route{Rungs: []job.Rung{rung("first", all, false), tt.g}}
			err := r.CheckOptions("route", tt.in, nil)
			if tt.field == "" {
				if err != nil {
					t.Fatalf("CheckOptions: %v", err)
				}
				return
			}
			var e *job.Error
			if !errors.As(err, &e) || e.Code != job.CodeUnsupported || e.Field != tt.field ||
				!strings.Contains(e.Message, "rung 1 (p/"+tt.g.Model+")") {
				t.Fatalf("CheckOptions = %v, want unsupported on %s naming rung 1", err, tt.field)
			}
		})
	}
}

// A thinking budget must stay below the output cap of every rung that
// thinks, which may be lower than the job's own max_tokens.
func TestAThinkingBudgetStaysBelowTheRungsCap(t *testing.T) {
	g := job.Rung{Provider: "an", Model: "claude-sonnet-4-5", Timeout: time.Minute, MaxTokens: 2048, Takes: job.Takes{Budget: true}}
	in := job.Input{Messages: []job.Message{{Role: "user", Content: "x"}}, MaxTokens: 8192,
		Options: job.Options{Reasoning: &job.Reasoning{BudgetTokens: 4096}}}
	var e *job.Error
	if err := (job.Route{Rungs: []job.Rung{g}}).CheckOptions("r", in, nil); !errors.As(err, &e) || e.Field != "input.reasoning.budget_tokens" || !strings.Contains(e.Message, "2048") {
		t.Fatalf("CheckOptions = %v, want the budget refused against the rung's cap 2048", err)
	}
	in.Reasoning.BudgetTokens = 2047
	if err := (job.Route{Rungs: []job.Rung{g}}).CheckOptions("r", in, nil); err != nil {
		t.Fatalf("a budget below the cap: %v", err)
	}
}
