package fake_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aijobs/aijobs/pkg/job"
	"github.com/aijobs/aijobs/pkg/model"
	"github.com/aijobs/aijobs/pkg/model/fake"
)

// price is deliberately lopsided so a swapped input/output count shows.
var price = job.Price{InputPerToken: 3, OutputPerToken: 7}

func user(content string) job.Message { return job.Message{Role: "user", Content: content} }

func req(jobID string, msgs ...job.Message) model.Request {
	return model.Request{JobID: jobID, Messages: msgs}
}

// asModelError fails the test unless err is a *model.Error.
func asModelError(t *testing.T, err error) *model.Error {
	t.Helper()
	var me *model.Error
	if !errors.As(err, &me) {
		t.Fatalf("error %v (%T) is not a *model.Error", err, err)
	}
	return me
}

func TestGenerateIsDeterministic(t *testing.T) {
	long := strings.Repeat("abcdefghij", 8) // 80 bytes, one word
	tests := []struct {
		name      string
		r         model.Request
		output    string
		modelName string
		in, out   int64
	}{
		{
			name:      "system and user",
			r:         req("j", job.Message{Role: "system", Content: "be brief"}, user("hello world")),
			output:    "fake reply to: hello world",
			modelName: "fake",
			in:        5, // ceil(19/4)
			out:       5,
		},
		{
			name: "last user message wins",
			r: req("j", user("first question"), job.Message{Role: "assistant", Content: "an answer"},
				user("second")),
			output:    "fake reply to: second",
			modelName: "fake",
			in:        8, // ceil(29/4)
			out:       4,
		},
		{
			name:      "model name echoed",
			r:         model.Request{JobID: "j", Model: "gpt-test", Messages: []job.Message{user("hi")}},
			output:    "fake reply to: hi",
			modelName: "gpt-test",
			in:        1,
			out:       4,
		},
		{
			name:      "first 60 bytes of the prompt",
			r:         req("j", user(long)),
			output:    "fake reply to: " + long[:60],
			modelName: "fake",
			in:        20,
			out:       4,
		},
		{
			name:      "max tokens caps the output",
			r:         model.Request{JobID: "j", MaxTokens: 2, Messages: []job.Message{user("one two three four")}},
			output:    "fake reply",
			modelName: "fake",
			in:        5, // ceil(18/4)
			out:       2,
		},
		{
			name:      "directives are not echoed",
			r:         req("j", user("[[fake:tokens=6]] count to three")),
			output:    "fake reply to: count to three",
			modelName: "fake",
			in:        8, // ceil(32/4)
			out:       6,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := fake.New(fake.Config{Price: price})
			first, err := p.Generate(context.Background(), tt.r)
			if err != nil {
				t.Fatalf("Generate: %v", err)
			}
			again, err := p.Generate(context.Background(), tt.r)
			if err != nil {
				t.Fatalf("second Generate: %v", err)
			}
			if first != again {
				t.Fatalf("not deterministic: %+v then %+v", first, again)
			}
			want := model.Response{Output: tt.output, Model: tt.modelName, FinishReason: "stop",
				Usage: model.Usage{InputTokens: tt.in, OutputTokens: tt.out}, Served: job.Standard}
			if first != want {
				t.Fatalf("got %+v\nwant %+v", first, want)
			}
		})
	}
}

func TestDirectives(t *testing.T) {
	hello := "hello there" // 11 bytes
	tests := []struct {
		name     string
		latency  time.Duration // Config.Latency
		prompt   string
		max      int
		deadline time.Duration // 0: no deadline
		minTime  time.Duration
		calls    int
		class    job.ErrorClass // "" means every call succeeds
		out      int64          // output tokens of a success
	}{
		{name: "latency override slower", prompt: "[[fake:latency=80ms]] " + hello, minTime: 80 * time.Millisecond, calls: 1, out: 5},
		{name: "latency override faster", latency: time.Hour, prompt: "[[fake:latency=1ms]] " + hello, calls: 1, out: 5},
		{name: "bad latency keeps default", prompt: "[[fake:latency=soon]] " + hello, calls: 1, out: 5},
		{name: "fail every call", prompt: "[[fake:fail=rate_limited]] " + hello, calls: 3, class: job.RateLimited},
		{name: "fail content filtered", prompt: hello + " [[fake:fail=content_filtered]]", calls: 2, class: job.ContentFiltered},
		{name: "unknown class is internal", prompt: "[[fake:fail=gremlins]] " + hello, calls: 2, class: job.Internal},
		{name: "tokens", prompt: "[[fake:tokens=42]] " + hello, calls: 1, out: 42},
		{name: "tokens capped", prompt: "[[fake:tokens=42]] " + hello, max: 10, calls: 1, out: 10},
		{name: "unknown directive ignored", prompt: "[[fake:sparkle]] " + hello, calls: 1, out: 5},
		{name: "hang until deadline", prompt: "[[fake:hang]] " + hello, deadline: 50 * time.Millisecond,
			minTime: 50 * time.Millisecond, calls: 1, class: job.Timeout},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := fake.New(fake.Config{Latency: tt.latency, Price: price})
			r := model.Request{JobID: "job-1", MaxTokens: tt.max, Messages: []job.Message{user(tt.prompt)}}
			in := int64(len(tt.prompt)+3) / 4
			for i := range tt.calls {
				// The clock starts before the deadline's: a deadline of d
				// ends at least d after start.
				start := time.Now()
				ctx := context.Background()
				if tt.deadline > 0 {
					var cancel context.CancelFunc
					ctx, cancel = context.WithTimeout(ctx, tt.deadline)
					defer cancel()
				}
				resp, err := p.Generate(ctx, r)
				if elapsed := time.Since(start); elapsed < tt.minTime || elapsed > 10*time.Second {
					t.Fatalf("call %d took %v, want at least %v", i+1, elapsed, tt.minTime)
				}
				if tt.class == "" {
					if err != nil {
						t.Fatalf("call %d: %v", i+1, err)
					}
					if resp.Usage != (model.Usage{InputTokens: in, OutputTokens: tt.out}) {
						t.Fatalf("usage %+v, want %d in %d out", resp.Usage, in, tt.out)
					}
					continue
				}
				me := asModelError(t, err)
				if me.Class != tt.class {
					t.Fatalf("call %d: class %q, want %q", i+1, me.Class, tt.class)
				}
				if class, usage := model.Classify(err); class != tt.class || usage != me.Usage {
					t.Fatalf("Classify = %q %+v, want %q %+v", class, usage, tt.class, me.Usage)
				}
				if tt.class == job.Timeout {
					if !errors.Is(err, context.DeadlineExceeded) {
						t.Fatalf("timeout does not wrap the deadline: %v", err)
					}
					continue
				}
				if want := "fake: scripted " + string(tt.class); me.Detail != want {
					t.Fatalf("detail %q, want %q", me.Detail, want)
				}
				if me.Usage != (model.Usage{InputTokens: in}) {
					t.Fatalf("failed call usage %+v, want %d input tokens only", me.Usage, in)
				}
			}
			if got := p.Calls("job-1"); got != tt.calls {
				t.Fatalf("Calls = %d, want %d", got, tt.calls)
			}
			wantGens := tt.calls
			if tt.class != "" {
				wantGens = 0
			}
			if got := p.Generations("job-1"); got != wantGens {
				t.Fatalf("Generations = %d, want %d", got, wantGens)
			}
		})
	}
}

func TestFailFirstNIsPerJob(t *testing.T) {
	p := fake.New(fake.Config{Price: price})
	prompt := "[[fake:fail=overloaded*2]] try again"
	// Interleave two jobs: each has its own count of failures.
	steps := []struct {
		jobID string
		fails bool
	}{
		{"a", true}, {"b", true}, {"a", true}, {"a", false}, {"b", true}, {"b", false}, {"a", false},
	}
	for i, s := range steps {
		_, err := p.Generate(context.Background(), req(s.jobID, user(prompt)))
		if s.fails {
			if me := asModelError(t, err); me.Class != job.Overloaded {
				t.Fatalf("step %d (%s): class %q, want overloaded", i, s.jobID, me.Class)
			}
		} else if err != nil {
			t.Fatalf("step %d (%s): %v, want success", i, s.jobID, err)
		}
	}
	for _, c := range []struct {
		jobID        string
		calls, gens  int
		failedBilled int64
	}{{"a", 4, 2, 2}, {"b", 3, 1, 2}} {
		if p.Calls(c.jobID) != c.calls || p.Generations(c.jobID) != c.gens {
			t.Fatalf("job %s: calls %d generations %d, want %d and %d",
				c.jobID, p.Calls(c.jobID), p.Generations(c.jobID), c.calls, c.gens)
		}
		in := int64(len(prompt)+3) / 4
		want := job.Nanocents(c.failedBilled)*price.Cost(in, 0) + job.Nanocents(c.gens)*price.Cost(in, 5)
		if got := p.Billed(c.jobID); got != want {
			t.Fatalf("job %s billed %v, want %v (failed calls are paid for too)", c.jobID, got, want)
		}
	}
	if got := p.TotalGenerations(); got != 3 {
		t.Fatalf("TotalGenerations = %d, want 3", got)
	}
}

func TestCancelKeepsPartialCost(t *testing.T) {
	p := fake.New(fake.Config{Latency: time.Second, Price: price})
	prompt := "[[fake:tokens=100]] write a long essay"
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var seen []int
	r := req("j", user(prompt))
	// Cancel from inside the callback once half the output has streamed, so
	// the point of cancellation does not depend on the scheduler.
	r.Progress = func(n int) {
		seen = append(seen, n)
		if n >= 50 {
			cancel()
		}
	}
	_, err := p.Generate(ctx, r)
	me := asModelError(t, err)
	if me.Class != job.Cancelled || !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v, want a cancelled error wrapping context.Canceled", err)
	}
	in := int64(len(prompt)+3) / 4
	if me.Usage.InputTokens != in || me.Usage.OutputTokens < 50 || me.Usage.OutputTokens >= 100 {
		t.Fatalf("usage %+v, want %d input and 50..99 output tokens", me.Usage, in)
	}
	if me.Usage.InputTokens != in || me.Usage.OutputTokens == 0 {
		t.Fatalf("usage %+v does not bill the streamed output", me.Usage)
	}
	if fmt.Sprint(seen) != "[25 50]" {
		t.Fatalf("progress %v, want [25 50]", seen)
	}
	if p.Generations("j") != 0 || p.Billed("j") != me.Usage.Cost(price) {
		t.Fatalf("generations %d billed %v, want 0 and %v", p.Generations("j"), p.Billed("j"), me.Usage.Cost(price))
	}
}

func TestContextEnds(t *testing.T) {
	tests := []struct {
		name   string
		ctx    func() (context.Context, context.CancelFunc)
		class  job.ErrorClass
		target error
	}{
		{
			name: "deadline is a timeout",
			ctx: func() (context.Context, context.CancelFunc) {
				return context.WithTimeout(context.Background(), 40*time.Millisecond)
			},
			class:  job.Timeout,
			target: context.DeadlineExceeded,
		},
		{
			name: "already cancelled",
			ctx: func() (context.Context, context.CancelFunc) {
				ctx, cancel := context.WithCancel(context.Background())
				cancel()
				return ctx, cancel
			},
			class:  job.Cancelled,
			target: context.Canceled,
		},
		{
			name: "already past deadline",
			ctx: func() (context.Context, context.CancelFunc) {
				return context.WithDeadline(context.Background(), time.Unix(0, 0))
			},
			class:  job.Timeout,
			target: context.DeadlineExceeded,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := fake.New(fake.Config{Latency: time.Hour, Price: price})
			ctx, cancel := tt.ctx()
			defer cancel()
			start := time.Now()
			_, err := p.Generate(ctx, req("j", user("hello")))
			if time.Since(start) > 10*time.Second {
				t.Fatal("Generate ignored the context")
			}
			me := asModelError(t, err)
			if me.Class != tt.class || !errors.Is(err, tt.target) {
				t.Fatalf("got %v, want class %q wrapping %v", err, tt.class, tt.target)
			}
			if me.Usage.InputTokens != 2 {
				t.Fatalf("usage %+v, want the input billed", me.Usage)
			}
			if p.Calls("j") != 1 || p.Generations("j") != 0 {
				t.Fatalf("calls %d generations %d, want 1 and 0", p.Calls("j"), p.Generations("j"))
			}
		})
	}
}

func TestProgress(t *testing.T) {
	tests := []struct {
		name    string
		latency time.Duration
		prompt  string
		want    string
	}{
		{name: "quarters of the latency", latency: 40 * time.Millisecond, prompt: "[[fake:tokens=40]] go", want: "[10 20 30 40]"},
		{name: "rounds down", latency: 20 * time.Millisecond, prompt: "[[fake:tokens=6]] go", want: "[1 3 4 6]"},
		{name: "no latency reports once", prompt: "[[fake:tokens=7]] go", want: "[7]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := fake.New(fake.Config{Latency: tt.latency})
			var seen []int
			r := req("j", user(tt.prompt))
			r.Progress = func(n int) { seen = append(seen, n) }
			if _, err := p.Generate(context.Background(), r); err != nil {
				t.Fatalf("Generate: %v", err)
			}
			if got := fmt.Sprint(seen); got != tt.want {
				t.Fatalf("progress %s, want %s", got, tt.want)
			}
		})
	}
	t.Run("nil callback", func(t *testing.T) {
		p := fake.New(fake.Config{Latency: 4 * time.Millisecond})
		if _, err := p.Generate(context.Background(), req("j", user("hi"))); err != nil {
			t.Fatalf("Generate: %v", err)
		}
	})
}

func TestCountersUnderConcurrency(t *testing.T) {
	const jobs, callsPerJob, failures = 4, 50, 3
	p := fake.New(fake.Config{Price: price})
	prompt := fmt.Sprintf("[[fake:fail=network*%d]] hello", failures)
	var wg sync.WaitGroup
	for j := range jobs {
		for range callsPerJob {
			wg.Go(func() {
				_, _ = p.Generate(context.Background(), req(fmt.Sprintf("job-%d", j), user(prompt)))
			})
		}
	}
	// Readers race the writers too.
	for range 8 {
		wg.Go(func() {
			_ = p.TotalGenerations()
			_ = p.Calls("job-0")
			_ = p.Billed("job-1")
			_ = p.Lanes("job-2")
		})
	}
	wg.Wait()
	for j := range jobs {
		id := fmt.Sprintf("job-%d", j)
		if p.Calls(id) != callsPerJob || p.Generations(id) != callsPerJob-failures {
			t.Fatalf("%s: calls %d generations %d, want %d and %d",
				id, p.Calls(id), p.Generations(id), callsPerJob, callsPerJob-failures)
		}
		if n := len(p.Lanes(id)); n != callsPerJob {
			t.Fatalf("%s: %d lanes recorded, want %d", id, n, callsPerJob)
		}
	}
	if got := p.TotalGenerations(); got != jobs*(callsPerJob-failures) {
		t.Fatalf("TotalGenerations = %d, want %d", got, jobs*(callsPerJob-failures))
	}
	p.Reset()
	if p.Calls("job-0") != 0 || p.Generations("job-0") != 0 || p.TotalGenerations() != 0 || p.Billed("job-0") != 0 ||
		p.Lanes("job-0") != nil {
		t.Fatal("Reset left counts behind")
	}
	// After Reset the scripted failures start over, as for a new provider.
	if _, err := p.Generate(context.Background(), req("job-0", user(prompt))); err == nil {
		t.Fatal("first call after Reset succeeded, want the scripted failure")
	}
}

func TestProviderInterface(t *testing.T) {
	var _ model.Provider = fake.New(fake.Config{})
}

// A lane scales the call's latency, scripted or default: flex three times
// as long, priority half as long, standard (or no lane) as scripted.
func TestLaneLatency(t *testing.T) {
	const latency = 200 * time.Millisecond
	tests := []struct {
		name     string
		lane     job.Lane
		prompt   string
		deadline time.Duration  // 0: none
		minTime  time.Duration  // the call takes at least this long
		class    job.ErrorClass // "" for an answer
	}{
		{name: "no lane", prompt: "hello", minTime: latency},
		{name: "standard", lane: job.Standard, prompt: "hello", minTime: latency},
		{name: "standard is not halved", lane: job.Standard, prompt: "hello", deadline: latency * 9 / 10, class: job.Timeout},
		{name: "priority is halved", lane: job.Priority, prompt: "hello", deadline: latency * 9 / 10, minTime: latency / 2},
		{name: "flex is tripled", lane: job.Flex, prompt: "hello", minTime: 3 * latency},
		{name: "flex is slower than standard", lane: job.Flex, prompt: "hello", deadline: 2 * latency, class: job.Timeout},
		{name: "a scripted latency is scaled too", lane: job.Flex, prompt: "[[fake:latency=30ms]] hello", minTime: 90 * time.Millisecond},
		{name: "an unknown lane is standard", lane: "turbo", prompt: "hello", minTime: latency},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel() // the calls mostly sleep
			p := fake.New(fake.Config{Latency: latency, Price: price})
			ctx := context.Background()
			if tt.deadline > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, tt.deadline)
				defer cancel()
			}
			r := req("j", user(tt.prompt))
			r.Lane = tt.lane
			start := time.Now()
			_, err := p.Generate(ctx, r)
			if elapsed := time.Since(start); elapsed < tt.minTime {
				t.Fatalf("took %v, want at least %v", elapsed, tt.minTime)
			}
			if tt.class == "" {
				if err != nil {
					t.Fatalf("Generate: %v", err)
				}
				return
			}
			if me := asModelError(t, err); me.Class != tt.class {
				t.Fatalf("class %q, want %q", me.Class, tt.class)
			}
		})
	}
}

// [[fake:flex_refuse]] refuses the flex calls alone, at once and for
// nothing; every call is counted, and Lanes tells them in order.
func TestFlexRefuse(t *testing.T) {
	prompt := "[[fake:flex_refuse]] hello there"
	in := int64(len(prompt)+3) / 4
	p := fake.New(fake.Config{Price: price})
	steps := []job.Lane{job.Flex, job.Standard, job.Priority, job.Flex, ""}
	gens := 0
	for i, lane := range steps {
		r := req("j", user(prompt))
		r.Lane = lane
		resp, err := p.Generate(context.Background(), r)
		if lane != job.Flex {
			if err != nil {
				t.Fatalf("step %d (%q): %v, want an answer", i, lane, err)
			}
			if want := (model.Usage{InputTokens: in, OutputTokens: 5}); resp.Usage != want {
				t.Fatalf("step %d (%q): usage %+v, want %+v", i, lane, resp.Usage, want)
			}
			gens++
			continue
		}
		me := asModelError(t, err)
		if me.Class != job.CapacityUnavailable || me.Usage != (model.Usage{}) {
			t.Fatalf("step %d: %q %+v, want capacity_unavailable billed nothing", i, me.Class, me.Usage)
		}
		if class, usage := model.Classify(err); class != job.CapacityUnavailable || usage != (model.Usage{}) {
			t.Fatalf("step %d: Classify = %q %+v", i, class, usage)
		}
	}
	wantLanes := []job.Lane{job.Flex, job.Standard, job.Priority, job.Flex, job.Standard}
	if got := p.Lanes("j"); !slices.Equal(got, wantLanes) {
		t.Fatalf("Lanes = %v, want %v", got, wantLanes)
	}
	if p.Calls("j") != len(steps) || p.Generations("j") != gens {
		t.Fatalf("calls %d generations %d, want %d and %d", p.Calls("j"), p.Generations("j"), len(steps), gens)
	}
	if want := job.Nanocents(gens) * price.Cost(in, 5); p.Billed("j") != want {
		t.Fatalf("billed %v, want %v: a refusal costs nothing", p.Billed("j"), want)
	}
	if got := p.Lanes("other"); got != nil {
		t.Fatalf("Lanes of a job never called = %v, want none", got)
	}

	t.Run("at once", func(t *testing.T) {
		p := fake.New(fake.Config{Latency: time.Hour, Price: price})
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		r := req("j", user(prompt))
		r.Lane = job.Flex
		_, err := p.Generate(ctx, r)
		if me := asModelError(t, err); me.Class != job.CapacityUnavailable {
			t.Fatalf("class %q, want capacity_unavailable without waiting", me.Class)
		}
	})
	t.Run("a cancelled call is cancelled", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		r := req("j", user(prompt))
		r.Lane = job.Flex
		_, err := fake.New(fake.Config{Price: price}).Generate(ctx, r)
		if me := asModelError(t, err); me.Class != job.Cancelled {
			t.Fatalf("class %q, want cancelled", me.Class)
		}
	})
	t.Run("Lanes is a copy", func(t *testing.T) {
		got := p.Lanes("j")
		got[0] = job.Priority
		if p.Lanes("j")[0] != job.Flex {
			t.Fatal("Lanes handed out the provider's own record")
		}
	})
}

// A prompt's cache and reasoning directives are reported as the
// providers report them (parts of the input and output counts) and
// billed at the fake's cache rates; a served directive says which lane
// served a call asked for in another, and every answer names its lane.
func TestCachedReasoningAndServedAreReportedAndBilled(t *testing.T) {
	p := fake.New(fake.Config{Price: price})
	prompt := "[[fake:cached=20]] [[fake:cache_write=5]] [[fake:reasoning=3]] [[fake:served=standard]] [[fake:tokens=8]] summarise this, please"
	r := req("a", user(prompt))
	r.Lane = job.Priority
	resp, err := p.Generate(context.Background(), r)
	if err != nil {
		t.Fatal(err)
	}
	in := int64(len(prompt)+3) / 4
	u := resp.Usage
	if u.InputTokens != in || u.CachedInputTokens != 20 || u.CacheWriteTokens != 5 || u.OutputTokens != 8 || u.ReasoningTokens != 3 {
		t.Fatalf("usage %+v, want %d input (20 read, 5 written), 8 output (3 reasoning)", u, in)
	}
	rates := fake.Rates(price)
	if rates.CachedInputPerToken == price.InputPerToken || rates.CacheWritePerToken == price.InputPerToken {
		t.Fatalf("the fake's cache rates %+v are the input price: a cached token could not be told apart", rates)
	}
	want := job.Nanocents(in-25)*rates.InputPerToken + 20*rates.CachedInputPerToken + 5*rates.CacheWritePerToken + 8*rates.OutputPerToken
	if got := p.Billed("a"); got != want || u.Cost(rates) != want {
		t.Fatalf("billed %v, usage costs %v; want %v", got, u.Cost(rates), want)
	}
	if resp.Served != job.Standard {
		t.Errorf("served %q, want standard", resp.Served)
	}
	plain, err := p.Generate(context.Background(), func() model.Request { r := req("b", user("hello")); r.Lane = job.Flex; return r }())
	if err != nil || plain.Served != job.Flex {
		t.Errorf("a flex call without directives: served %q, err %v; want flex", plain.Served, err)
	}
}

// TestAnswerBytesMakesALargeAnswerAtAStatedCost: answer_bytes pads the
// output to exactly N bytes (capped), and bills what the call would have
// without it, so a test can state a 1 MB answer's exact cost.
func TestAnswerBytesMakesALargeAnswerAtAStatedCost(t *testing.T) {
	p := fake.New(fake.Config{Price: price})
	plain, err := p.Generate(context.Background(), req("a", user("hello there")))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		prompt string
		want   int
	}{
		{"[[fake:answer_bytes=1048576]] hello there", 1 << 20},
		{"[[fake:answer_bytes=3]] hello there", len(plain.Output)}, // shorter than the reply: the reply
		{"[[fake:answer_bytes=999999999]] hello there", fake.MaxAnswerBytes},
	} {
		resp, err := p.Generate(context.Background(), req("b", user(c.prompt)))
		if err != nil {
			t.Fatal(err)
		}
		if len(resp.Output) != c.want || !strings.HasPrefix(resp.Output, "fake reply to: hello there") {
			t.Fatalf("%s: %d bytes (%.30q), want %d starting with the reply", c.prompt, len(resp.Output), resp.Output, c.want)
		}
		if resp.Usage.OutputTokens != plain.Usage.OutputTokens {
			t.Fatalf("%s: %d output tokens, want %d as without the padding", c.prompt, resp.Usage.OutputTokens, plain.Usage.OutputTokens)
		}
	}
}
