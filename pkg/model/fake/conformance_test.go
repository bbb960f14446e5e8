package fake_test

import (
	"testing"

	"github.com/aijobs/aijobs/pkg/job"
	"github.com/aijobs/aijobs/pkg/model"
	"github.com/aijobs/aijobs/pkg/model/fake"
	"github.com/aijobs/aijobs/pkg/model/modeltest"
)

// TestConformance holds the fake to the contract every provider keeps
// (pkg/model/modeltest), so what the end-to-end tests see of it is what a
// real provider would do. Its wire is the prompt: directives script it.
func TestConformance(t *testing.T) {
	// scripted is a call of the suite's request with directive in front.
	scripted := func(directive string) modeltest.Call {
		p := fake.New(fake.Config{Price: price})
		r := modeltest.Request()
		if directive != "" {
			r.Messages = []job.Message{user(directive + " " + modeltest.Prompt)}
		}
		return modeltest.Call{Provider: p, Request: r, Reached: func() int { return p.Calls(r.JobID) }}
	}
	modeltest.Run(t, modeltest.Provider{
		Answering: func(*testing.T, bool) modeltest.Call {
			c := scripted("")
			// The prompt's 29 bytes at four a token, rounded up; a word a token.
			c.Want = model.Response{Output: "fake reply to: " + modeltest.Prompt, Model: "fake", FinishReason: "stop",
				Usage: model.Usage{InputTokens: 8, OutputTokens: 8}, Served: job.Standard}
			return c
		},
		// Progress comes at each quarter of the latency: 100 ms apart.
		Stalling: func(*testing.T, bool) modeltest.Call { return scripted("[[fake:latency=400ms]]") },
		Refusing: func(_ *testing.T, _ bool, message string) modeltest.Call {
			c := scripted("[[fake:fail=rate_limited]] " + message)
			in := int64(len(c.Request.Messages[0].Content)+3) / 4
			c.Billed = &model.Usage{InputTokens: in} // the fake bills a failed call its prompt
			return c
		},
	})
}
