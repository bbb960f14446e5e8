package job_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/aijobs/aijobs/pkg/job"
)

// An embedding input is texts and nothing of a chat input: each refusal
// is an invalid_request naming the field.
func TestCheckInputHoldsAnEmbeddingInputToItsRules(t *testing.T) {
	l := job.Limits{MaxMessages: 3, DefaultMaxTokens: 2048, MaxMaxTokens: 32_768}
	many := make([]string, job.MaxTexts)
	for i := range many {
		many[i] = "t"
	}
	seed := int64(1)
	for _, tt := range []struct {
		name  string
		in    job.Input
		field string // "" means accepted
	}{
		{"one text", job.Input{Texts: []string{"a"}}, ""},
		{"the most texts", job.Input{Texts: many}, ""},
		{"dimensions", job.Input{Texts: []string{"a"}, Dimensions: job.MaxDimensions}, ""},
		{"no texts", job.Input{Texts: []string{}}, "input.texts"},
		{"too many texts", job.Input{Texts: append(many, "x")}, "input.texts"},
		{"an empty text", job.Input{Texts: []string{"a", ""}}, "input.texts[1]"},
		{"texts and messages", job.Input{Texts: []string{"a"}, Messages: []job.Message{{Role: "user", Content: "x"}}}, "input.texts"},
		{"max_tokens", job.Input{Texts: []string{"a"}, MaxTokens: 5}, "input.max_tokens"},
		{"a temperature", job.Input{Texts: []string{"a"}, Temperature: float(1)}, "input.temperature"},
		{"a seed", job.Input{Texts: []string{"a"}, Options: job.Options{Seed: &seed}}, "input.seed"},
		{"negative dimensions", job.Input{Texts: []string{"a"}, Dimensions: -1}, "input.dimensions"},
		{"too many dimensions", job.Input{Texts: []string{"a"}, Dimensions: job.MaxDimensions + 1}, "input.dimensions"},
		{"dimensions of a chat input", job.Input{Messages: []job.Message{{Role: "user", Content: "x"}}, Dimensions: 8}, "input.dimensions"},
		{"neither", job.Input{}, "input.messages"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			in := tt.in
			err := l.CheckInput(&in)
			var e *job.Error
			switch {
			case tt.field == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tt.field == "":
				if in.MaxTokens != 0 {
					t.Errorf("max_tokens defaulted to %d on an embedding input", in.MaxTokens)
				}
			case !errors.As(err, &e) || e.Code != job.CodeInvalidRequest || e.Field != tt.field:
				t.Fatalf("got %v, want invalid_request on %s", err, tt.field)
			}
		})
	}
}

// A route's rungs must be of the input's kind: texts on a chat model, or
// messages on an embedding model, are refused option_unsupported naming
// the rung, as is a dimensions the model cannot honour and a batch lane
// the job could be served in whose provider takes no embeddings in
// batches.
func TestCheckOptionsHoldsAnEmbeddingJobToEmbeddingRungs(t *testing.T) {
	embed := job.Rung{Provider: "oai", Model: "text-embedding-3-small", Embeds: true, Takes: job.Takes{Dimensions: true}}
	ada := job.Rung{Provider: "oai", Model: "text-embedding-ada-002", Embeds: true}
	chat := job.Rung{Provider: "oai", Model: "gpt-4o-mini"}
	titan := job.Rung{Provider: "br", Model: "amazon.titan-embed-text-v2:0", Embeds: true, Takes: job.Takes{Dimensions: true, DimensionsIn: [3]int{256, 512, 1024}}}
	cohere := job.Rung{Provider: "br", Model: "cohere.embed-english-v3", Embeds: true, Takes: job.Takes{Dimensions: true, DimensionsIn: [3]int{1024}, TextChars: 2048}}
	batched := embed
	batched.Takes.BatchEmbeddings = true
	batched.Lanes = []job.Rung{{Provider: "oai", Model: embed.Model, Embeds: true, Lane: job.Batch, Takes: batched.Takes}}
	titanBatched := titan
	titanBatched.Lanes = []job.Rung{{Provider: "br", Model: titan.Model, Embeds: true, Lane: job.Batch, Takes: titan.Takes}}
	texts := job.Input{Texts: []string{"a"}}
	msgs := job.Input{Messages: []job.Message{{Role: "user", Content: "x"}}, MaxTokens: 5}
	for _, tt := range []struct {
		name  string
		rungs []job.Rung
		in    job.Input
		lanes []job.Lane
		field string
		rung  string
	}{
		{"texts on embedding rungs", []job.Rung{embed, ada}, texts, nil, "", ""},
		{"messages on a chat rung", []job.Rung{chat}, msgs, nil, "", ""},
		{"texts on a chat rung", []job.Rung{embed, chat}, texts, nil, "input.texts", "rung 1 (oai/gpt-4o-mini)"},
		{"messages on an embedding rung", []job.Rung{embed}, msgs, nil, "input.messages", "rung 0 (oai/text-embedding-3-small)"},
		{"dimensions on ada", []job.Rung{embed, ada}, job.Input{Texts: []string{"a"}, Dimensions: 64}, nil, "input.dimensions", "rung 1"},
		{"a length titan takes", []job.Rung{titan}, job.Input{Texts: []string{"a"}, Dimensions: 512}, nil, "", ""},
		{"a length titan does not take", []job.Rung{embed, titan}, job.Input{Texts: []string{"a"}, Dimensions: 64}, nil, "input.dimensions", "rung 1 (br/amazon.titan-embed-text-v2:0)"},
		{"cohere's own length", []job.Rung{cohere}, job.Input{Texts: []string{"a"}, Dimensions: 1024}, nil, "", ""},
		{"another length on cohere", []job.Rung{cohere}, job.Input{Texts: []string{"a"}, Dimensions: 512}, nil, "input.dimensions", "takes dimensions [1024] only"},
		{"2,048 characters on cohere", []job.Rung{cohere}, job.Input{Texts: []string{"a", strings.Repeat("é", 2048)}}, nil, "", ""},
		{"2,049 characters on cohere", []job.Rung{embed, cohere}, job.Input{Texts: []string{"a", strings.Repeat("x", 2049)}}, nil, "input.texts[1]", "rung 1 (br/cohere.embed-english-v3)"},
		{"a batch lane that takes embeddings", []job.Rung{batched}, texts, nil, "", ""},
		{"a batch lane that takes none", []job.Rung{batched, titanBatched}, texts, nil, "lanes", "rung 1 (br/amazon.titan-embed-text-v2:0)"},
		{"a batch lane that takes none, not allowed", []job.Rung{titanBatched}, texts, []job.Lane{job.Standard}, "", ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := job.Route{Rungs: tt.rungs}.CheckOptions("r", tt.in, tt.lanes)
			var e *job.Error
			switch {
			case tt.field == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tt.field == "":
			case !errors.As(err, &e) || e.Code != job.CodeUnsupported || e.Field != tt.field || !strings.Contains(e.Message, tt.rung):
				t.Fatalf("got %v, want option_unsupported on %s naming %s", err, tt.field, tt.rung)
			}
		})
	}
}

// An embedding's worst case is its texts' ceiling at the input price and
// no output, whatever output cap the rung has.
func TestAnEmbeddingsWorstCaseIsItsTextsAtTheInputPrice(t *testing.T) {
	g := job.Rung{Model: "text-embedding-3-small", Embeds: true, MaxTokens: 4096,
		Price: job.Price{InputPerToken: 2, OutputPerToken: 8}}
	in := job.Input{Texts: []string{"abc", "abcd", strings.Repeat("x", 101)}}
	// (3+1)/2 + (4+1)/2 + (101+1)/2 = 2 + 2 + 51
	if got := in.Ceiling(); got != 55 {
		t.Fatalf("ceiling %d, want 55", got)
	}
	if got, want := g.WorstTokens(in), int64(55); got != want {
		t.Errorf("worst tokens %d, want %d", got, want)
	}
	if got, want := g.WorstCase(in), g.Price.Cost(55, 0); got != want || got == 0 {
		t.Errorf("worst case %v, want %v", got, want)
	}
}
