// Package fake is a deterministic model provider: the local default and the
// test double of the end-to-end tests. Its behaviour is scripted from the
// prompt itself ([[fake:...]] directives), so a test drives it over HTTP
// like any client would, and it counts calls, generations and money per
// job, so "never a second billed generation" can be measured.
//
// The directives, anywhere in any message:
//
//   - [[fake:latency=D]]: the call takes D (a time.ParseDuration) instead
//     of Config.Latency.
//   - [[fake:fail=CLASS]]: every call fails with CLASS (an unknown class is
//     internal), after its latency, billed its prompt.
//     [[fake:fail=CLASS*N]]: only the job's first N calls fail.
//   - [[fake:hang]]: the call waits until its context ends.
//   - [[fake:tokens=N]]: the answer is N output tokens (at most MaxTokens).
//   - [[fake:answer_bytes=N]]: the answer's output is N bytes (the reply
//     padded with "x", at most MaxAnswerBytes), billed as the tokens it
//     would be without it: a large answer (docs/payloads.md, "Answers")
//     at a cost a test can state.
//   - [[fake:flex_refuse]]: a call in the flex lane is refused at once with
//     capacity_unavailable, billed nothing and generating nothing, as a
//     provider's full flex pool refuses; calls in other lanes are
//     unaffected, so a test can watch the worker move to a faster lane.
//     A refused call is still one of the job's calls (Calls, and the N of
//     fail=CLASS*N).
//   - [[fake:cached=N]], [[fake:cache_write=N]]: N of the call's input
//     tokens were read from (written to) the prompt cache, reported and
//     billed as the providers do (docs/providers.md: parts of the input
//     count, as OpenAI's prompt_tokens_details.cached_tokens,
//     https://platform.openai.com/docs/guides/prompt-caching): at Rates'
//     shares of the input price.
//   - [[fake:reasoning=N]]: N of the output tokens were reasoning, billed
//     as output like every other.
//   - [[fake:served=LANE]]: a call asked for in another lane is served
//     (and billed) in LANE, as OpenAI's priority processing past its
//     ramp limit answers service_tier "default" at standard rates
//     (https://platform.openai.com/docs/guides/priority-processing). Every
//     answer says which lane served it.
//   - [[fake:nonconforming]]: a job with a response_format is answered
//     JSON its schema refuses; without it, a JSON instance of the schema
//     (schema.go).
//
// A call's lane (Request.Lane) scales its latency as the providers' tiers
// do: flex takes three times as long, priority half as long, standard
// (or no lane) as long as scripted. Lanes tells which lanes a job's calls
// asked for.
package fake

import (
	"context"
	"errors"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/aijobs/aijobs/pkg/job"
	"github.com/aijobs/aijobs/pkg/model"
)

// Config sets the defaults a prompt's directives override. Price is what
// the fake "invoices" per call (Billed), as a real provider's bill would
// show: the worker prices usage at its own configured price, and a test
// compares the two.
type Config struct {
	Latency time.Duration
	Price   job.Price
	// BatchLatency is how long a batch takes to end (zero: four times
	// Latency), on Clock (the system's when nil): a test that drives its
	// collector's clock ends batches on it, not on how fast it ran.
	BatchLatency time.Duration
	Clock        job.Clock
}

// Provider is the fake model. Safe for concurrent use.
type Provider struct {
	cfg   Config
	mu    sync.Mutex
	calls map[string]int
	gens  map[string]int
	spent map[string]job.Nanocents
	lanes map[string][]job.Lane
	// running counts calls under way, so a test can tell a stopped call
	// from one still waiting.
	running map[string]int
	// batches are the submitted batches, by id.
	batches map[string]*batch
}

// New returns a fake provider.
func New(cfg Config) *Provider {
	cfg.Price = Rates(cfg.Price)
	return &Provider{cfg: cfg, calls: map[string]int{}, gens: map[string]int{}, spent: map[string]job.Nanocents{},
		lanes: map[string][]job.Lane{}, running: map[string]int{}}
}

var directive = regexp.MustCompile(`\[\[fake:([a-z_]+)(?:=([^\]]*))?\]\]`)

// script is what a prompt's directives ask for.
type script struct {
	latency   time.Duration
	failClass job.ErrorClass
	failFirst int // with counted: only the first failFirst calls of the job fail
	counted   bool
	hang      bool
	tokens    int
	// answerBytes pads the output to this many bytes (0: as replied).
	answerBytes int
	// flexRefuse refuses the call if it is in the flex lane.
	flexRefuse bool
	// cached, cacheWrite and reasoning are the parts of the usage the
	// cache served, the cache took and the model reasoned with; served
	// the lane that serves a call asked for in another.
	cached, cacheWrite, reasoning int64
	served                        job.Lane
}

func parse(r model.Request, def time.Duration) script {
	sc := script{latency: def}
	for _, m := range r.Messages {
		for _, d := range directive.FindAllStringSubmatch(m.Text(), -1) {
			switch d[1] {
			case "latency":
				if l, err := time.ParseDuration(d[2]); err == nil {
					sc.latency = l
				}
			case "fail":
				class, count, _ := strings.Cut(d[2], "*")
				sc.failClass = job.ErrorClass(class)
				if !sc.failClass.Valid() {
					sc.failClass = job.Internal
				}
				if count != "" {
					n, err := strconv.Atoi(count)
					sc.failFirst, sc.counted = max(n, 0), err == nil
				}
			case "hang":
				sc.hang = true
			case "tokens":
				sc.tokens, _ = strconv.Atoi(d[2])
			case "answer_bytes":
				n, _ := strconv.Atoi(d[2])
				sc.answerBytes = min(max(n, 0), MaxAnswerBytes)
			case "flex_refuse":
				sc.flexRefuse = true
			case "cached":
				sc.cached = count(d[2])
			case "cache_write":
				sc.cacheWrite = count(d[2])
			case "reasoning":
				sc.reasoning = count(d[2])
			case "served":
				sc.served = job.Lane(d[2])
			}
		}
	}
	return sc
}

// Generate answers deterministically after the scripted latency, or fails
// as scripted. A failed or interrupted call still reports (and bills) the
// tokens it consumed.
func (p *Provider) Generate(ctx context.Context, r model.Request) (model.Response, error) {
	sc := parse(r, p.cfg.Latency)
	lane := laneOf(r)
	p.mu.Lock()
	p.calls[r.JobID]++
	call := p.calls[r.JobID]
	p.lanes[r.JobID] = append(p.lanes[r.JobID], lane)
	p.running[r.JobID]++
	p.mu.Unlock()
	defer func() {
		p.mu.Lock()
		p.running[r.JobID]--
		p.mu.Unlock()
	}()

	if sc.flexRefuse && lane == job.Flex && ctx.Err() == nil {
		// A full pool answers at once, and a refusal is not billed.
		return model.Response{}, &model.Error{Class: job.CapacityUnavailable, Detail: "fake: flex capacity unavailable"}
	}
	in := inputTokens(r)
	out := outputTokens(r, sc)
	sc.latency = scaled(sc.latency, lane)
	if sc.hang {
		sc.latency = 1<<62 - 1
	}
	if produced, err := wait(ctx, sc.latency, out, r.Progress); err != nil {
		cls := job.Cancelled
		if errors.Is(err, context.DeadlineExceeded) {
			cls = job.Timeout
		}
		return model.Response{}, p.failure(r.JobID, cls, "fake: interrupted", model.Usage{InputTokens: in, OutputTokens: produced}, err)
	}
	if sc.failClass != "" && (!sc.counted || call <= sc.failFirst) {
		return model.Response{}, p.failure(r.JobID, sc.failClass, "fake: scripted "+string(sc.failClass), model.Usage{InputTokens: in}, nil)
	}
	u := sc.usage(in, out)
	served := lane
	if sc.served.Valid() {
		served = sc.served
	}
	p.mu.Lock()
	p.gens[r.JobID]++
	p.spent[r.JobID] += u.Cost(p.cfg.Price)
	p.mu.Unlock()
	name := r.Model
	if name == "" {
		name = "fake"
	}
	return model.Response{Output: sc.padded(reply(r, int(out))), Model: name, FinishReason: "stop", Usage: u, Served: served}, nil
}

// MaxAnswerBytes bounds answer_bytes, so a prompt cannot make the fake
// hold more than a few answers of the largest size a test needs.
const MaxAnswerBytes = 16 << 20

// padded is out padded with "x" to answerBytes (out itself when it is
// as long already, or no size was asked).
func (sc script) padded(out string) string {
	if sc.answerBytes <= len(out) {
		return out
	}
	return out + strings.Repeat("x", sc.answerBytes-len(out))
}

// count is a directive's count, none when it is not one.
func count(s string) int64 {
	n, _ := strconv.ParseInt(s, 10, 64)
	return max(n, 0)
}

// usage is a call of in input and out output tokens as the script
// reports it: its cached parts and reasoning cut to what the call used.
func (sc script) usage(in, out int64) model.Usage {
	read := min(sc.cached, in)
	return model.Usage{InputTokens: in, OutputTokens: out, CachedInputTokens: read,
		CacheWriteTokens: min(sc.cacheWrite, in-read), ReasoningTokens: min(sc.reasoning, out)}
}

// Rates is p with the fake's prompt-cache rates where p states none:
// reads at half the input price, writes at 1.25x (between OpenAI's and
// Anthropic's), so a test sees a cached token priced apart from the
// rest. config prices a fake rung's cache the same way.
func Rates(p job.Price) job.Price {
	if p.CachedInputPerToken == 0 {
		p.CachedInputPerToken = (p.InputPerToken + 1) / 2
	}
	if p.CacheWritePerToken == 0 {
		p.CacheWritePerToken = (p.InputPerToken*5 + 3) / 4
	}
	return p
}

// laneOf is the lane r asked for; no lane is the standard one, as the
// providers send nothing for either.
func laneOf(r model.Request) job.Lane {
	if r.Lane == "" {
		return job.Standard
	}
	return r.Lane
}

// scaled is latency d in lane l: flex slower and priority faster, as the
// providers' tiers trade time for price, so a test sees the worker's
// lane choice in how long a job takes.
func scaled(d time.Duration, l job.Lane) time.Duration {
	switch l {
	case job.Flex:
		return min(d, math.MaxInt64/3) * 3 // a huge scripted latency must not wrap around to no wait
	case job.Priority:
		return d / 2
	}
	return d
}

// failure is a failed call of job id that used u, billed as a provider
// bills a failure: for what it used.
func (p *Provider) failure(id string, class job.ErrorClass, detail string, u model.Usage, err error) error {
	cost := p.cfg.Price.Cost(u.InputTokens, u.OutputTokens)
	p.mu.Lock()
	p.spent[id] += cost
	p.mu.Unlock()
	return &model.Error{Class: class, Detail: detail, Usage: u, Err: err}
}

// wait lets latency pass, reporting proportional progress four times, and
// returns how many output tokens were "produced" when ctx ended early.
func wait(ctx context.Context, latency time.Duration, out int64, progress func(int)) (int64, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	if latency <= 0 {
		if progress != nil {
			progress(int(out))
		}
		return out, nil
	}
	start := time.Now()
	step := latency / 4
	for i := 1; i <= 4; i++ {
		t := time.NewTimer(time.Until(start.Add(step * time.Duration(i))))
		select {
		case <-ctx.Done():
			t.Stop()
			frac := float64(time.Since(start)) / float64(latency)
			return int64(frac * float64(out)), ctx.Err()
		case <-t.C:
		}
		if progress != nil {
			progress(int(out) * i / 4)
		}
	}
	return out, nil
}

func inputTokens(r model.Request) int64 {
	var b int64
	for _, m := range r.Messages {
		b += int64(len(m.Text()))
		// An image or a document bills a fixed 1,000 tokens: any count
		// within the hold (job.ImageTokens) serves the fake's purpose.
		for _, p := range m.Parts {
			if p.Type != job.PartText {
				b += 4 * 1000
			}
		}
	}
	return (b + 3) / 4
}

func outputTokens(r model.Request, sc script) int64 {
	out := int64(len(strings.Fields(reply(r, 1<<30))))
	if sc.tokens > 0 {
		out = int64(sc.tokens)
	}
	if r.MaxTokens > 0 && out > int64(r.MaxTokens) {
		out = int64(r.MaxTokens)
	}
	return out
}

func reply(r model.Request, maxWords int) string {
	if s, ok := schemaReply(r); ok {
		return s
	}
	last := ""
	for _, m := range r.Messages {
		if m.Role == "user" {
			last = m.Text()
		}
	}
	last = strings.TrimSpace(directive.ReplaceAllString(last, ""))
	if len(last) > 60 {
		cut := 60
		for cut > 0 && !utf8.RuneStart(last[cut]) {
			cut--
		}
		last = last[:cut]
	}
	words := strings.Fields(fmt.Sprintf("fake reply to: %s", last))
	if len(words) > maxWords {
		words = words[:maxWords]
	}
	return strings.Join(words, " ")
}

// Calls is how many times Generate ran for the job.
func (p *Provider) Calls(jobID string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.calls[jobID]
}

// Generations is how many calls for the job returned a result: billed
// generations, the number that must never exceed one per job.
func (p *Provider) Generations(jobID string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.gens[jobID]
}

// TotalGenerations counts results over every job.
func (p *Provider) TotalGenerations() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for _, g := range p.gens {
		n += g
	}
	return n
}

// Lanes is the lane of each call for the job, in the order the calls
// came (standard for a call that named none), so a test can check which
// lanes the worker tried.
func (p *Provider) Lanes(jobID string) []job.Lane {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.lanes[jobID])
}

// Running is how many calls for the job are under way.
func (p *Provider) Running(jobID string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.running[jobID]
}

// Billed is what every call for the job cost, failed ones included: the
// amount the job record's cost must equal.
func (p *Provider) Billed(jobID string) job.Nanocents {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.spent[jobID]
}
