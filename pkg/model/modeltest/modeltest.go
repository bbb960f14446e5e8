// Package modeltest is the conformance suite every model provider passes:
// the contract the worker relies on, written once, as pkg/storetest holds
// every job store to one standard. Each provider runs it against its own
// wire fixtures through a small adapter.
//
// Run holds every provider, the fake included: an answer reports its usage
// and its progress reaches it; a call cancelled or out of time mid-answer
// is classified as such and billed at least what it produced; a refusal is
// a classified error. Every call of every case is also held to what no
// provider may ever do: more than one call per Generate, an error that is
// not a classified *model.Error, an error that shows a secret or the
// prompt, progress that goes back.
//
// RunHTTP holds the providers that speak HTTP to Run's cases and to their
// transport's: no redirect followed; a request never sent billed nothing;
// one sent and never answered billed the worst case, or the prompt for a
// stream; a cut stream billed what was read, the server's counts where they
// arrived; an answer without counts estimated; timeouts of every kind
// classified; a cancel closing the stream. The amounts are the rows of
// docs/errors.md, "What a failed call is billed".
package modeltest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/aijobs/aijobs/pkg/job"
	"github.com/aijobs/aijobs/pkg/model"
)

const (
	// Prompt is what every case asks: no error may repeat it.
	Prompt = "SECRET-PROMPT tell me a story"
	// MaxTokens is the limit every case asks for, as the worker always
	// sets one: a call sent whose answer was lost is billed all of it.
	MaxTokens = 300
)

// Request is the generation every case asks for.
func Request() model.Request {
	return model.Request{JobID: "job-1", Messages: []job.Message{{Role: "user", Content: Prompt}}, MaxTokens: MaxTokens}
}

// Bare is Request() with every option left to its default: no
// MaxTokens, so the provider sends its own.
func Bare() model.Request {
	return model.Request{JobID: "job-1", Messages: []job.Message{{Role: "user", Content: Prompt}}}
}

// Provider is a provider under test, as Run drives it: each function
// arranges one call, its side of the call included, and returns it.
type Provider struct {
	// Streams runs every case with the provider streaming and not.
	Streams bool
	// Secret is the credential the provider was given, if any: no error
	// may show it.
	Secret string
	// Answering is a call answered in full; its Want is the response due.
	Answering func(t *testing.T, stream bool) Call
	// Stalling is a call that produces part of its answer (a stream: one
	// delta; a whole answer: nothing yet) and then waits until its context
	// ends.
	Stalling func(t *testing.T, stream bool) Call
	// Refusing is a call the provider's side refuses with message, a text
	// that quotes the prompt.
	Refusing func(t *testing.T, stream bool, message string) Call
}

// Call is one arranged call.
type Call struct {
	Provider model.Provider
	// Request is Request(), or it with what the provider's side needs to
	// play its part (the fake reads its script from the prompt).
	Request model.Request
	// Reached tells how many calls reached the provider's side so far:
	// its server's requests, or the fake's own count.
	Reached func() int
	// Want is the response of an answered call.
	Want model.Response
	// Billed, when set, is exactly what the call is billed when it fails;
	// nil: what it produced, at least (the fake's share of its latency).
	Billed *model.Usage
}

// Run runs the cases every provider passes.
func Run(t *testing.T, p Provider) {
	modes := []bool{false}
	if p.Streams {
		modes = append(modes, true)
	}
	s := suite{secret: p.Secret}
	for _, stream := range modes {
		for _, c := range []struct {
			name string
			run  func(*testing.T, suite, Provider, bool)
		}{
			{"an answer reports its usage", answers},
			{"a cancel mid-answer is cancelled, billed what was produced", cancelled},
			{"a deadline mid-answer is a timeout, billed what was produced", timedOut},
			{"a refusal is a classified error", refused},
			{"an answer its response_format refuses is paid for", misanswers},
		} {
			t.Run(fmt.Sprintf("%s stream=%v", c.name, stream), func(t *testing.T) { c.run(t, s, p, stream) })
		}
	}
}

func answers(t *testing.T, s suite, p Provider, stream bool) {
	c := p.Answering(t, stream)
	resp, progress, err := s.generate(t, context.Background(), c, nil)
	if err != nil {
		t.Fatalf("Generate: %v", err)
	}
	if resp != c.Want {
		t.Fatalf("got %+v\nwant %+v", resp, c.Want)
	}
	if last(progress) != int(resp.Usage.OutputTokens) {
		t.Fatalf("progress %v ends short of the %d output tokens reported", progress, resp.Usage.OutputTokens)
	}
	s.once(t, c)
}

// misanswers asks the answering call for a response_format its answer
// does not follow (the HTTP wires' servers answer their text whatever
// the body asks; the fake is told to answer JSON the schema refuses): the
// call succeeds with its usage, and model.CheckOutput refuses the answer
// invalid_output carrying that usage, so the worker keeps its cost.
func misanswers(t *testing.T, s suite, p Provider, stream bool) {
	c := p.Answering(t, stream)
	c.Request.Messages = append(slices.Clone(c.Request.Messages), job.Message{Role: "user", Content: "[[fake:nonconforming]]"})
	c.Request.Options.ResponseFormat = &job.ResponseFormat{Type: job.FormatJSONSchema,
		JSONSchema: &job.JSONSchema{Name: "answer", Schema: json.RawMessage(`{"type":"object","required":["answer"]}`)}}
	resp, _, err := s.generate(t, context.Background(), c, nil)
	if err != nil {
		t.Fatalf("Generate: %v", err)
	}
	me := modelError(t, model.CheckOutput(job.Input{Messages: c.Request.Messages, Options: c.Request.Options}, resp))
	if me.Class != job.InvalidOutput || me.Usage != resp.Usage || resp.Usage.OutputTokens <= 0 {
		t.Fatalf("answer %q: %v with usage %+v, want invalid_output carrying the answer's usage", resp.Output, me, me.Usage)
	}
	s.once(t, c)
}

func cancelled(t *testing.T, s suite, p Provider, stream bool) {
	interrupted(t, s, p.Stalling(t, stream), false)
}

func timedOut(t *testing.T, s suite, p Provider, stream bool) {
	interrupted(t, s, p.Stalling(t, stream), true)
}

// interrupted ends a stalled call by its context: a cancel, at its first
// progress or after 100 ms; or a deadline, after 150 ms.
func interrupted(t *testing.T, s suite, c Call, deadline bool) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	class, cause := job.Cancelled, context.Canceled
	var hook func(int)
	if deadline {
		class, cause = job.Timeout, context.DeadlineExceeded
		ctx, cancel = context.WithTimeout(ctx, 150*time.Millisecond)
		defer cancel()
	} else {
		hook = func(int) { cancel() }
		defer time.AfterFunc(100*time.Millisecond, cancel).Stop()
	}
	start := time.Now()
	_, progress, err := s.generate(t, ctx, c, hook)
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("the call outlived its context by %v", d)
	}
	me := modelError(t, err)
	if me.Class != class || !errors.Is(err, cause) {
		t.Fatalf("class %q (%v), want %q wrapping %v", me.Class, err, class, cause)
	}
	billed(t, c, me.Usage, progress)
	s.once(t, c)
}

func refused(t *testing.T, s suite, p Provider, stream bool) {
	message := "you may not ask for " + Prompt + " here"
	c := p.Refusing(t, stream, message)
	_, _, err := s.generate(t, context.Background(), c, nil, message, message[:len(message)/2])
	billed(t, c, modelError(t, err).Usage, nil)
	s.once(t, c)
}

// billed checks what a failed call is billed: exactly c.Billed when the
// adapter knows it, else at least the output its progress reported, and
// its prompt.
func billed(t *testing.T, c Call, got model.Usage, progress []int) {
	t.Helper()
	if c.Billed != nil {
		if got != *c.Billed {
			t.Fatalf("billed %+v, want %+v", got, *c.Billed)
		}
		return
	}
	if got.InputTokens <= 0 || got.OutputTokens < int64(last(progress)) {
		t.Fatalf("billed %+v, less than the prompt and the %d output tokens reported", got, last(progress))
	}
}

// suite holds what every call is checked against.
type suite struct{ secret string }

// generate makes c's call on ctx and returns its answer, the progress it
// reported and its error (hook, when set, sees each report too). Every call is held
// to the contract: progress never goes back, and an error is a classified
// *model.Error that Classify reads back, whose detail fits a record (at
// most 100 bytes) and which shows neither the secret, the prompt, nor any
// of secrets.
func (s suite) generate(t *testing.T, ctx context.Context, c Call, hook func(int), secrets ...string) (model.Response, []int, error) {
	t.Helper()
	var progress []int
	r := c.Request
	r.Progress = func(n int) {
		if n < last(progress) {
			t.Errorf("progress went back from %d to %d", last(progress), n)
		}
		progress = append(progress, n)
		if hook != nil {
			hook(n)
		}
	}
	resp, err := c.Provider.Generate(ctx, r)
	if err != nil {
		s.check(t, err, secrets...)
	}
	return resp, progress, err
}

// once checks that c's Generate reached the provider's side exactly once:
// retries happen only through the claim path, where they are counted and
// paid for.
func (s suite) once(t *testing.T, c Call) {
	t.Helper()
	if n := c.Reached(); n != 1 {
		t.Fatalf("%d calls reached the provider, want exactly 1 (no retries)", n)
	}
}

func last(progress []int) int {
	if len(progress) == 0 {
		return 0
	}
	return progress[len(progress)-1]
}
