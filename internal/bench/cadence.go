package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// CadenceOptions are the by-cadence runs' knobs: what polling costs, and
// how late a client learns a job ended, when every client waits exactly
// what the API's Retry-After tells it (issue 11).
type CadenceOptions struct {
	Endpoint string
	// Latencies are the fake model's, one run each, one after another (a
	// run's lag is seconds of sleeping clients; other runs' load would
	// only blur it).
	Latencies []time.Duration
	// Jobs per run, all created at once, one client each.
	Jobs int
	// Warmup jobs run the same way before them, unmeasured: what an API
	// that learns from the jobs it served has seen of the route when a
	// steady stream of jobs reaches it (a fresh stack has seen none).
	Warmup int
}

// Parse reads a comma-separated list of latencies ("none" for none), for
// a flag.
func (o *CadenceOptions) Parse(v string) (err error) {
	o.Latencies, err = parseLatencies(v)
	return err
}

// defaultWait is what a client waits when an answer has no usable
// Retry-After: after the create, and after a poll of a job not yet
// terminal.
const defaultWait = time.Second

// maxPollsPerJob ends a client that the API keeps answering too soon
// (Retry-After 0) before it spins for ever.
const maxPollsPerJob = 5000

// CadenceRun is one latency's run.
type CadenceRun struct {
	Latency time.Duration
	Jobs    int
	// PostRetryAfter counts the creates whose 202 carried a Retry-After.
	PostRetryAfter int
	// Polls are every GET, 304s (NotModified) included.
	Polls, NotModified int
	// RetryAfters counts the GETs' Retry-After values, in seconds.
	RetryAfters map[int]int
	// Lags are, per job that ended, how long after its last write
	// (updated_at) its client saw it ended.
	Lags []time.Duration
	// GetItems are every DynamoDB GetItem of the run, by consistency:
	// the polls' and the few the worker makes on the way.
	GetItems GetItemSplit
	// NotTerminal counts the jobs whose client gave up before they ended.
	NotTerminal int
}

// ByCadence runs every latency of o in turn, each on its own dev server
// and resources, batch size 1 and one invocation per job (as Lambda would
// scale), so that every job takes about its latency: the jobs' model
// calls are spread evenly over the latency ±10% (jobLatency).
func ByCadence(ctx context.Context, o CadenceOptions) ([]CadenceRun, error) {
	var out []CadenceRun
	for _, l := range o.Latencies {
		r, err := cadenceRun(ctx, o, l)
		out = append(out, r)
		if err != nil {
			return out, fmt.Errorf("cadence at %s: %w", l, err)
		}
	}
	return out, nil
}

func cadenceRun(ctx context.Context, o CadenceOptions, latency time.Duration) (CadenceRun, error) {
	st, err := startStack(ctx, Options{Endpoint: o.Endpoint, Jobs: o.Jobs, Concurrency: o.Jobs, Latency: latency,
		BatchSize: 1, MaxConcurrency: max(o.Jobs, 2)}, nil)
	if err != nil {
		return CadenceRun{}, err
	}
	defer st.stop()
	// Room for every client to see its job end, however slowly the API
	// tells it to poll.
	ctx, cancel := context.WithTimeout(ctx, latency+5*time.Minute)
	defer cancel()
	if o.Warmup > 0 {
		if _, err := wave(ctx, st, latency, 0, o.Warmup); err != nil {
			return CadenceRun{}, fmt.Errorf("warm-up: %w", err)
		}
		st.counter.Reset()
	}
	run, err := wave(ctx, st, latency, o.Warmup, o.Jobs)
	run.GetItems.Consistent, run.GetItems.Eventual = st.counter.GetItems()
	return run, err
}

// wave creates n jobs at once, numbered from first (their idempotency
// keys), one polite client each, and waits for every client to see its
// job end.
func wave(ctx context.Context, st *stack, latency time.Duration, first, n int) (CadenceRun, error) {
	var (
		mu       sync.Mutex
		wg       sync.WaitGroup
		run      = CadenceRun{Latency: latency, Jobs: n}
		firstErr error
	)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p, err := politeJob(ctx, st.client, st.url, first+i, fmt.Sprintf(" [[fake:latency=%s]]", jobLatency(latency, i, n)))
			mu.Lock()
			defer mu.Unlock()
			if err != nil && firstErr == nil {
				firstErr = err
			}
			run.add(p)
		}()
	}
	wg.Wait()
	return run, firstErr
}

// latencySpread is how far the jobs' model latencies spread around the
// run's, as a share of it.
const latencySpread = 0.2

// jobLatency is job i of n's model latency: evenly spread over
// l·(1 ± latencySpread/2), mean l. With every job taking exactly l, the
// lag would be one phase between the job's end and the clients' polling
// grid, set by a few milliseconds of queueing; spread, it is the lag
// over every phase, as real models' varying latencies give.
func jobLatency(l time.Duration, i, n int) time.Duration {
	f := 1 - latencySpread/2 + latencySpread*(float64(i)+0.5)/float64(max(n, 1))
	return time.Duration(float64(l) * f).Round(time.Millisecond)
}

// polled is what one client saw of its job.
type polled struct {
	postRetryAfter     bool
	polls, notModified int
	retryAfters        []int
	terminal           bool
	lag                time.Duration
}

func (r *CadenceRun) add(p polled) {
	if p.postRetryAfter {
		r.PostRetryAfter++
	}
	r.Polls += p.polls
	r.NotModified += p.notModified
	for _, s := range p.retryAfters {
		if r.RetryAfters == nil {
			r.RetryAfters = map[int]int{}
		}
		r.RetryAfters[s]++
	}
	if p.terminal {
		r.Lags = append(r.Lags, p.lag)
	} else {
		r.NotTerminal++
	}
}

// politeJob creates job i and polls it as a well-behaved client does: it
// waits the create's Retry-After (1 s without one), then GETs with
// If-None-Match (the last ETag it saw) and waits each answer's
// Retry-After (1 s without one) until the job is terminal.
func politeJob(ctx context.Context, client *http.Client, url string, i int, directive string) (polled, error) {
	var p polled
	created, err := post(client, url, i, directive)
	if err != nil {
		return p, err
	}
	wait, ok := retryAfter(created.RetryAfter)
	if p.postRetryAfter = ok; !ok {
		wait = defaultWait
	}
	etag := created.ETag
	for p.polls < maxPollsPerJob {
		select {
		case <-ctx.Done():
			return p, fmt.Errorf("job %s: %w after %d polls", created.ID, ctx.Err(), p.polls)
		case <-time.After(wait):
		}
		a, err := poll(ctx, client, url, created.ID, etag)
		if err != nil {
			return p, err
		}
		p.polls++
		if a.notModified {
			p.notModified++
		} else {
			etag = a.etag
		}
		if a.terminal {
			p.terminal, p.lag = true, a.seen.Sub(a.updatedAt)
			return p, nil
		}
		wait = defaultWait
		if s, ok := retryAfter(a.retryAfter); ok {
			wait = s
			p.retryAfters = append(p.retryAfters, int(s/time.Second))
		}
	}
	return p, fmt.Errorf("job %s not terminal after %d polls", created.ID, p.polls)
}

// answer is one GET's: terminal is only ever true on a 200 (a terminal
// job's last write changed its ETag since the client's last look).
type answer struct {
	notModified bool
	etag        string
	retryAfter  string
	terminal    bool
	updatedAt   time.Time
	// seen is when the answer arrived.
	seen time.Time
}

func poll(ctx context.Context, client *http.Client, url, id, etag string) (answer, error) {
	req, _ := http.NewRequestWithContext(ctx, "GET", url+"/jobs/"+id, nil)
	req.Header.Set("Authorization", "Bearer bench")
	if etag != "" {
		req.Header.Set("If-None-Match", etag)
	}
	resp, err := client.Do(req)
	if err != nil {
		return answer{}, fmt.Errorf("poll %s: %w", id, err)
	}
	defer resp.Body.Close()
	a := answer{seen: time.Now(), etag: resp.Header.Get("ETag"), retryAfter: resp.Header.Get("Retry-After")}
	switch resp.StatusCode {
	case http.StatusNotModified:
		a.notModified = true
		_, _ = io.Copy(io.Discard, resp.Body)
		return a, nil
	case http.StatusOK:
	default:
		return a, fmt.Errorf("poll %s: status %d", id, resp.StatusCode)
	}
	var v struct {
		State     string    `json:"state"`
		UpdatedAt time.Time `json:"updated_at"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&v); err != nil {
		return a, fmt.Errorf("poll %s: decode: %w", id, err)
	}
	a.terminal, a.updatedAt = terminalState(v.State), v.UpdatedAt
	return a, nil
}

func terminalState(s string) bool { return s == "succeeded" || s == "failed" || s == "abandoned" }

// retryAfter reads a Retry-After in delay-seconds, the form the API sends
// (RFC 9110 10.2.3). ok is false when h is absent or in another form (an
// HTTP date, a negative or fractional number): the client then waits
// defaultWait.
func retryAfter(h string) (d time.Duration, ok bool) {
	h = strings.TrimSpace(h)
	if h == "" || strings.TrimLeft(h, "0123456789") != "" {
		return 0, false
	}
	n, err := strconv.ParseInt(h, 10, 32)
	if err != nil {
		return 0, false
	}
	return time.Duration(n) * time.Second, true
}
