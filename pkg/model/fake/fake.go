// Package fake is a deterministic model provider: the local default and the
// test double of the end-to-end tests. Its behaviour is scripted from the
// prompt itself ([[fake:...]] directives), so a test drives it over HTTP
// like any client would, and it counts calls, generations and money per
// job, so "never a second billed generation" can be measured.
package fake

import (
	"context"
	"errors"
	"fmt"
	"regexp"
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
}

// Provider is the fake model. Safe for concurrent use.
type Provider struct {
	cfg   Config
	mu    sync.Mutex
	calls map[string]int
	gens  map[string]int
	spent map[string]job.Nanocents
}

// New returns a fake provider.
func New(cfg Config) *Provider {
	return &Provider{cfg: cfg, calls: map[string]int{}, gens: map[string]int{}, spent: map[string]job.Nanocents{}}
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
}

func parse(r model.Request, def time.Duration) script {
	sc := script{latency: def}
	for _, m := range r.Messages {
		for _, d := range directive.FindAllStringSubmatch(m.Content, -1) {
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
	p.mu.Lock()
	p.calls[r.JobID]++
	call := p.calls[r.JobID]
	p.mu.Unlock()

	in := inputTokens(r)
	out := outputTokens(r, sc)
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
	cost := p.cfg.Price.Cost(in, out)
	p.mu.Lock()
	p.gens[r.JobID]++
	p.spent[r.JobID] += cost
	p.mu.Unlock()
	name := r.Model
	if name == "" {
		name = "fake"
	}
	return model.Response{Output: reply(r, int(out)), Model: name, FinishReason: "stop",
		Usage: model.Usage{InputTokens: in, OutputTokens: out}}, nil
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
		b += int64(len(m.Content))
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
	last := ""
	for _, m := range r.Messages {
		if m.Role == "user" {
			last = m.Content
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

// Billed is what every call for the job cost, failed ones included: the
// amount the job record's cost must equal.
func (p *Provider) Billed(jobID string) job.Nanocents {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.spent[jobID]
}
