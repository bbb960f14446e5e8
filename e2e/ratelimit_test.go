package e2e

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aijobs/aijobs/pkg/job"
)

// The rate-limit measurement (docs/benchmarks.md, "Provider rate
// limits"): one provider key that admits N requests and M tokens a
// minute, jobs over three routes that share it (200 a run in make test;
// the figures in docs/benchmarks.md are of 1,000: -ratelimit.jobs 1000),
// once with the key's limits declared and once with none declared (the
// bucket learns them from the provider's headers); -ratelimit.limits
// runs one of the two alone.
var (
	rlJobs = flag.Int("ratelimit.jobs", 200, "jobs per run of the rate-limit measurement (docs/benchmarks.md quotes 1,000)")
	rlRPM  = flag.Int("ratelimit.rpm", 600, "the fake key's requests per minute")
	rlTPM  = flag.Int("ratelimit.tpm", 0, "the fake key's tokens per minute (0: 100 per request)")
	// rlOver declares limits this many times the key's real ones: the
	// bucket then learns the real limit from the provider's own word
	// (429s and what its headers say is left).
	// rlThroughput holds the key's throughput to within 10% of its limit:
	// the measurement's own run, on a machine with room for N calls a
	// minute. Inside make test, beside every other package on a shared
	// machine, the workers cannot always send N, and throughput is
	// reported, not held.
	rlThroughput = flag.Bool("ratelimit.throughput", false, "hold the key's throughput to within 10% of its limit")
	rlOver       = flag.Float64("ratelimit.over", 1, "declared limits as a multiple of the key's real ones")
	rlLimits     = flag.String("ratelimit.limits", "both", "which runs: declared (the entry declares the key's limits), learned (it declares none), or both")
)

// quota is a provider key's limit as a provider keeps it: a token bucket
// per kind, holding `window` worth of the per-minute limit (a second's:
// OpenAI's documentation says a limit may be enforced over shorter
// periods; or a minute's, the whole limit at once) and refilled
// continuously, a call admitted only when both have room for it. A
// refusal is a 429 with the headers OpenAI sends, retry-after-ms the time
// until the refill covers the call.
type quota struct {
	mu               sync.Mutex
	reqRate, tokRate float64 // per second
	reqCap, tokCap   float64 // what each bucket holds when full
	req, tok         float64 // what is in each bucket at last
	last             time.Time
}

func newQuota(rpm, tpm int, window time.Duration) *quota {
	q := &quota{reqRate: float64(rpm) / 60, tokRate: float64(tpm) / 60, last: time.Now()}
	q.reqCap, q.tokCap = math.Max(1, q.reqRate*window.Seconds()), q.tokRate*window.Seconds()
	q.req, q.tok = q.reqCap, q.tokCap
	return q
}

// admit takes one request of tokens, or answers how long until it fits;
// either way what is left of each kind and how long until each is full.
func (q *quota) admit(tokens float64) (ok bool, left [2]float64, full [2]time.Duration, wait time.Duration) {
	q.mu.Lock()
	defer q.mu.Unlock()
	now := time.Now()
	dt := now.Sub(q.last).Seconds()
	q.last = now
	q.req, q.tok = math.Min(q.reqCap, q.req+dt*q.reqRate), math.Min(q.tokCap, q.tok+dt*q.tokRate)
	if ok = q.req >= 1 && q.tok >= tokens; ok {
		q.req, q.tok = q.req-1, q.tok-tokens
	} else {
		wait = time.Duration(math.Max((1-q.req)/q.reqRate, (tokens-q.tok)/q.tokRate) * float64(time.Second))
	}
	sec := func(f float64) time.Duration { return time.Duration(f * float64(time.Second)) }
	return ok, [2]float64{q.req, q.tok}, [2]time.Duration{sec((q.reqCap - q.req) / q.reqRate), sec((q.tokCap - q.tok) / q.tokRate)}, wait
}

// limitedKey is the provider behind the quota: an OpenAI-shaped server
// that counts every call, every refusal (and those after its first
// minute), and each job's answers.
type limitedKey struct {
	srv                *httptest.Server
	q                  *quota
	rpm, tpm           int
	start              time.Time
	calls, refused     atomic.Int64
	lateCalls, lateRef atomic.Int64 // a minute or more after the first call
	mu                 sync.Mutex
	answers            map[string]int
	firstAnswer, lastA time.Time
}

func newLimitedKey(t *testing.T, rpm, tpm int, window time.Duration) *limitedKey {
	k := &limitedKey{q: newQuota(rpm, tpm, window), rpm: rpm, tpm: tpm, answers: map[string]int{}}
	k.srv = httptest.NewServer(http.HandlerFunc(k.serve))
	t.Cleanup(k.srv.Close)
	return k
}

// count counts a call and answers whether it came after the first minute.
func (k *limitedKey) count() bool {
	k.mu.Lock()
	if k.start.IsZero() {
		k.start = time.Now()
	}
	late := time.Since(k.start) >= time.Minute
	k.mu.Unlock()
	k.calls.Add(1)
	if late {
		k.lateCalls.Add(1)
	}
	return late
}

// The headers a key's answers and refusals carry, as OpenAI names them
// (platform.openai.com/docs/guides/rate-limits, "Rate limits in
// headers"): each kind's limit a minute, what is left, and the time
// until it is full again.
func (k *limitedKey) headers(h http.Header, left [2]float64, full [2]time.Duration) {
	h.Set("x-ratelimit-limit-requests", strconv.Itoa(k.rpm))
	h.Set("x-ratelimit-limit-tokens", strconv.Itoa(k.tpm))
	h.Set("x-ratelimit-remaining-requests", strconv.Itoa(int(left[0])))
	h.Set("x-ratelimit-remaining-tokens", strconv.Itoa(int(left[1])))
	h.Set("x-ratelimit-reset-requests", full[0].Round(time.Millisecond).String())
	h.Set("x-ratelimit-reset-tokens", full[1].Round(time.Millisecond).String())
}

func (k *limitedKey) serve(w http.ResponseWriter, r *http.Request) {
	late := k.count()
	var req struct {
		Messages []struct {
			Content string `json:"content"`
		} `json:"messages"`
		MaxTokens int `json:"max_tokens"`
	}
	raw, _ := io.ReadAll(r.Body)
	_ = json.Unmarshal(raw, &req)
	prompt, marker := 0, ""
	for _, m := range req.Messages {
		prompt += (len(m.Content) + 3) / 4
		marker = m.Content
	}
	ok, left, full, wait := k.q.admit(float64(prompt + req.MaxTokens)) // as OpenAI counts: the prompt and max_tokens
	h := w.Header()
	k.headers(h, left, full)
	if !ok {
		k.refused.Add(1)
		if late {
			k.lateRef.Add(1)
		}
		h.Set("retry-after-ms", strconv.FormatInt(wait.Milliseconds()+1, 10))
		h.Set("retry-after", strconv.FormatInt(int64(math.Ceil(wait.Seconds())), 10))
		w.WriteHeader(http.StatusTooManyRequests)
		fmt.Fprint(w, `{"error":{"message":"Rate limit reached for requests","type":"requests","code":"rate_limit_exceeded"}}`)
		return
	}
	time.Sleep(20 * time.Millisecond) // the generation
	h.Set("Content-Type", "text/event-stream")
	openaiDelta(w, "fine")
	openaiEnd(w, prompt, 10)
	k.mu.Lock()
	defer k.mu.Unlock()
	k.answers[marker]++
	now := time.Now()
	if k.firstAnswer.IsZero() {
		k.firstAnswer = now
	}
	k.lastA = now
}

// rateRun is what one run measured.
type rateRun struct {
	calls, refused                    int64
	lateCalls, lateRefused            int64 // after the key's first minute
	succeeded, failedRateLimited, bad int
	answeredTwice                     int
	perMinute                         float64 // answers a minute, first to last
	took                              time.Duration
}

// keyLimits are the fake key's requests and tokens a minute: the flags,
// tokens 100 a request unless given.
func keyLimits() (rpm, tpm int) {
	rpm, tpm = *rlRPM, *rlTPM
	if tpm == 0 {
		tpm = 100 * rpm
	}
	return rpm, tpm
}

// rateCase is one run's schedule: jobs on a key of rpm and tpm whose
// quota holds window's worth, its limits declared (at over times the
// real ones) or not.
type rateCase struct {
	jobs, rpm, tpm int
	window         time.Duration
	declared       bool
	over           float64
}

// runRateLimited sends c's jobs over three routes on one key and waits
// for every job to end.
func runRateLimited(t *testing.T, c rateCase) rateRun {
	k := newLimitedKey(t, c.rpm, c.tpm, c.window)
	limits := ""
	if c.declared {
		limits = fmt.Sprintf(`, "limits": {"requests_per_minute": %d, "tokens_per_minute": %d}`,
			int(float64(c.rpm)*c.over), int(float64(c.tpm)*c.over))
	}
	rung := `{"rungs": [{"provider": "key", "model": "gpt-e2e", "price": {"input": "15", "output": "60"}, "timeout": "3s"}]}`
	routes := fmt.Sprintf(`{"providers": {"key": {"kind": "openai", "base_url": %q%s}},
	  "routes": {"default": %s, "summarise": %s, "classify": %s}}`, k.srv.URL+"/v1", limits, rung, rung, rung)
	// Leases of 4 s, so a take may wait in place for up to 2 s before
	// its job is deferred (worker.Timing.maxInlineWait). The worker's
	// function timeout is 2 min, not the harness's 6 s: a take's wait, a
	// 3 s call and the finish fit 6 s on an idle machine only, and an
	// invocation overrun under load hands its whole batch back while its
	// answers are written, which is the function timeout at work, not the
	// rate limit under test (seen as jobs answered twice beside a second
	// make test).
	s := startStackWith(t, map[string]string{"AIJOBS_ROUTES": routes, "AIJOBS_LEASE_TTL": "4s", "AIJOBS_HEARTBEAT": "500ms",
		"AIJOBS_MAX_CONCURRENCY": "8", "AIJOBS_WORKER_TIMEOUT": "2m", "AIJOBS_VISIBILITY_TIMEOUT": "2m"}, false)
	start := time.Now()
	ids := make([]string, c.jobs)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := g; i < len(ids); i += 8 {
				route := []string{"default", "summarise", "classify"}[i%3]
				ids[i] = s.submit("t", "rl-"+strconv.Itoa(i), jobBody(fmt.Sprintf("[[e2e:%d]] say something", i), `"model":"`+route+`"`))
			}
		}()
	}
	wg.Wait()
	var run rateRun
	for _, j := range awaitAll(t, s, ids, 5*time.Minute) {
		switch {
		case j.State == job.Succeeded:
			run.succeeded++
		case j.ErrorClass == job.RateLimited:
			run.failedRateLimited++
		default:
			run.bad++
		}
	}
	run.took = time.Since(start)
	run.calls, run.refused = k.calls.Load(), k.refused.Load()
	run.lateCalls, run.lateRefused = k.lateCalls.Load(), k.lateRef.Load()
	k.mu.Lock()
	defer k.mu.Unlock()
	for _, n := range k.answers {
		if n > 1 {
			run.answeredTwice++
		}
	}
	if span := k.lastA.Sub(k.firstAnswer); span > 0 {
		run.perMinute = float64(len(k.answers)-1) / span.Minutes()
	}
	return run
}

// log writes what run measured of jobs at a key of rpm.
func (r rateRun) log(t *testing.T, name string, jobs, rpm int) {
	t.Helper()
	t.Logf("%-15s %d jobs: %d calls, %d refused by the provider (%.2f%%; after the first minute %d of %d), %d succeeded, %d failed rate_limited, %d other; %.0f answers a minute (limit %d, %.1f%%) in %s",
		name, jobs, r.calls, r.refused, 100*float64(r.refused)/float64(max(r.calls, 1)), r.lateRefused, r.lateCalls,
		r.succeeded, r.failedRateLimited, r.bad, r.perMinute, rpm, 100*r.perMinute/float64(rpm), r.took.Round(time.Second))
}

// hold fails t unless every one of jobs succeeded, none failed
// rate_limited, each was answered once, and under refusedShare of the
// calls (after the key's first minute when there were any: the first
// minute is when an undeclared limit is learned) were refused.
func (r rateRun) hold(t *testing.T, name string, jobs int, refusedShare float64) {
	t.Helper()
	if r.succeeded != jobs || r.failedRateLimited != 0 || r.answeredTwice != 0 {
		t.Errorf("%s: %d of %d succeeded, %d failed rate_limited, %d answered twice", name, r.succeeded, jobs, r.failedRateLimited, r.answeredTwice)
	}
	calls, refused := r.calls, r.refused
	if r.lateCalls > 0 {
		calls, refused = r.lateCalls, r.lateRefused
	}
	if share := float64(refused) / float64(max(calls, 1)); share >= refusedShare {
		t.Errorf("%s: %.2f%% of calls were refused by the provider, want under %.0f%%", name, 100*share, 100*refusedShare)
	}
}

// awaitAll reads the jobs of ids from the store until every one has
// ended, and answers them; it fails when no job ended for stall.
func awaitAll(t *testing.T, s *stack, ids []string, stall time.Duration) []job.Job {
	t.Helper()
	ended := make([]job.Job, 0, len(ids))
	pending := slices.Clone(ids)
	awaitProgress(t, stall, time.Second, func() (int, bool) {
		var still []string
		for _, id := range pending {
			j, err := s.app.Store.Get(context.Background(), id)
			if err != nil || !j.State.Terminal() {
				still = append(still, id)
				continue
			}
			ended = append(ended, j)
		}
		pending = still
		return len(ended), len(pending) == 0
	}, func() string { return fmt.Sprintf("%d of %d jobs had not ended", len(pending), len(ids)) })
	return ended
}

// TestEveryWorkerObeysTheProviderKeysRateLimit is issue I's measurement,
// and issue K's: with the key's limits declared, and with none declared
// (the bucket learns them from the provider's headers), the jobs finish
// with none failed rate_limited, each answered once, the key's throughput
// within 10% of its limit, and provider 429s on under 1% of calls (with
// none declared, after the key's first minute; a run shorter than a
// minute, as in make test, holds its learning burst to under 10%).
func TestEveryWorkerObeysTheProviderKeysRateLimit(t *testing.T) {
	// Not parallel: the key, not the e2e tests beside it, must be what
	// limits the run.
	rpm, tpm := keyLimits()
	for _, mode := range []string{"declared", "learned"} {
		if *rlLimits != "both" && *rlLimits != mode {
			continue
		}
		c := rateCase{jobs: *rlJobs, rpm: rpm, tpm: tpm, window: time.Second, declared: mode == "declared", over: *rlOver}
		r := runRateLimited(t, c)
		r.log(t, mode, c.jobs, rpm)
		share := 0.01
		if mode == "learned" && r.lateCalls == 0 {
			share = 0.10
		}
		r.hold(t, mode, c.jobs, share)
		if ratio := r.perMinute / float64(rpm); ratio > 1.1 || *rlThroughput && ratio < 0.9 {
			t.Errorf("%s: the key answered %.0f a minute, want within 10%% of %d", mode, r.perMinute, rpm)
		}
	}
}

// TestABurstOnAKeyWithoutDeclaredLimitsLearnsThem: 60 jobs at once on a
// key limited to 40 calls a minute (its quota a minute's worth, refilled
// continuously, as Anthropic describes its own), no limits declared.
// Before its limits were learned this failed a third of the jobs
// rate_limited with 80 of 120 calls refused; now the first answer's
// headers teach every worker the limit, a 429 pauses the key and defers
// its job uncounted, and every job succeeds with under 10% of the calls
// refused.
//
// Parallel: its key paces it (a call every 1.5 s, about 110 s in all),
// not the machine, and it asserts no throughput, so the package's other
// tests may run beside it.
func TestABurstOnAKeyWithoutDeclaredLimitsLearnsThem(t *testing.T) {
	t.Parallel()
	c := rateCase{jobs: 60, rpm: 40, tpm: 40 * 100, window: time.Minute}
	r := runRateLimited(t, c)
	r.log(t, "burst, learned", c.jobs, c.rpm)
	r.hold(t, "burst, learned", c.jobs, 0.10)
}
