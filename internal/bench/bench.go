// Package bench measures the local stack end to end: N jobs through the dev
// server (real handlers, real adapters, kumo) with a fake model, reporting
// throughput, create and poll latency, AWS API calls per job by operation
// (counted by SDK middleware) and the Lambda GB-seconds the event source
// emulator metered; next to it, the emulator's own ceiling for the same
// call mix, and what the measured calls and GB-seconds cost at AWS's
// prices (docs/benchmarks.md).
package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/aijobs/aijobs/internal/quota"
	"github.com/aijobs/aijobs/pkg/devserver"
)

// Options are the benchmark's knobs.
type Options struct {
	Endpoint    string
	Jobs        int
	Concurrency int
	// PollEvery is the client's poll interval while a job is not finished.
	PollEvery time.Duration
	// BatchWindow is the event source mapping's batching window.
	BatchWindow time.Duration
	// BatchSize and MaxConcurrency are the event source mapping's (10 and
	// 8 when zero).
	BatchSize, MaxConcurrency int
	// Latency is the fake model's time per call.
	Latency time.Duration
	// Callbacks turns the notifier on and gives every job a callback to
	// a receiver on loopback; the run then ends once every job's callback
	// has arrived.
	Callbacks bool
	// Meter, when set, is the quota front's that o.Endpoint is: it is
	// reset once the stack is set up and read into Result.Units at the
	// end (RunUnits).
	Meter *quota.Meter
	// Env adds to (or overrides) the stack's environment.
	Env map[string]string
	// InputBytes pads each job's prompt to about this many bytes (0:
	// none): the units by input size (UnitsByInput).
	InputBytes int
}

// Result is one run's figures.
type Result struct {
	Jobs         int
	BatchSize    int
	Elapsed      time.Duration
	Create, Poll []time.Duration
	Polls        int
	Calls        map[string]int
	// GetItems splits Calls' "DynamoDB.GetItem" by read consistency,
	// which prices them (cost.go).
	GetItems      GetItemSplit
	Generations   int
	NotSucceeded  int
	PollCallsOnly int
	// Worker and API are the Lambda usage the dev server metered.
	Worker, API devserver.Usage
	// WorkerMemoryMB is the memory the worker's GB-seconds were metered at.
	WorkerMemoryMB int
	// NotifierStream and NotifierDeliver are the notifier's metered
	// invocations from the table's stream and from the callback queue
	// (zero with callbacks off); Delivered is the distinct callbacks the
	// receiver got.
	NotifierStream, NotifierDeliver devserver.Usage
	Delivered                       int
	// Written is what each function wrote to its log stream, by name
	// (api, worker, reconciler, notifier).
	Written map[string]Written
	// Units is what the jobs consumed of DynamoDB's capacity, when the
	// run went through a quota front (Options.Meter).
	Units Units
}

// GetItemSplit is a run's DynamoDB GetItem calls by read consistency.
type GetItemSplit struct{ Consistent, Eventual int }

// Run starts a dev server on a fresh prefix and drives Jobs jobs through it.
func Run(ctx context.Context, o Options) (Result, error) {
	if o.BatchSize == 0 {
		o.BatchSize = 10
	}
	if o.MaxConcurrency == 0 {
		o.MaxConcurrency = 8
	}
	st, err := startStack(ctx, o, nil)
	if err != nil {
		return Result{}, err
	}
	defer st.stop()
	if o.Meter != nil {
		o.Meter.Reset() // meter the jobs, not the setup
	}
	url, client := st.url, st.client
	callback := ""
	if st.receiver != nil {
		callback = st.receiver.url
	}
	var (
		mu  sync.Mutex
		res = Result{Jobs: o.Jobs, BatchSize: o.BatchSize}
		wg  sync.WaitGroup
		sem = make(chan struct{}, o.Concurrency)
	)
	start := time.Now()
	var firstErr error
	for i := range o.Jobs {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			c, p, polls, state, err := oneJob(client, url, i, o.PollEvery, jobShape{callback: callback, pad: o.InputBytes})
			mu.Lock()
			defer mu.Unlock()
			if err != nil && firstErr == nil {
				firstErr = err
			}
			res.Create = append(res.Create, c)
			res.Poll = append(res.Poll, p...)
			res.Polls += polls
			if state != "succeeded" {
				res.NotSucceeded++
			}
		}()
	}
	wg.Wait()
	res.Elapsed = time.Since(start)
	if st.receiver != nil {
		st.receiver.wait(o.Jobs, 30*time.Second)
		res.Delivered, _ = st.receiver.delivered()
		time.Sleep(300 * time.Millisecond) // the last delivery's record write and delete
	}
	time.Sleep(200 * time.Millisecond) // let the last batch's deletes land
	if o.Meter != nil {
		res.Units = unitsOf(o.Meter, st.cfg, o.Jobs, res.Elapsed)
	}
	res.Calls = st.counter.Snapshot()
	res.GetItems.Consistent, res.GetItems.Eventual = st.counter.GetItems()
	res.Generations = st.fake.TotalGenerations()
	res.Worker, res.API, res.WorkerMemoryMB = st.srv.Poller.Usage(), st.srv.Gateway.Usage(), st.cfg.Settings.WorkerMemoryMB
	if st.srv.Streams != nil {
		res.NotifierStream, res.NotifierDeliver = st.srv.Streams.Usage(), st.srv.Callbacks.Usage()
	}
	res.Written = st.written()
	if o.Callbacks && res.Delivered < o.Jobs && firstErr == nil {
		firstErr = fmt.Errorf("%d of %d callbacks delivered", res.Delivered, o.Jobs)
	}
	return res, firstErr
}

// jobShape is what a run's jobs carry besides their number: a callback
// target ("" for none) and the bytes their prompt is padded by.
type jobShape struct {
	callback string
	pad      int
}

func oneJob(client *http.Client, url string, i int, every time.Duration, shape jobShape) (time.Duration, []time.Duration, int, string, error) {
	id, created, err := create(client, url, i, shape)
	if err != nil {
		return created, nil, 0, "", err
	}
	v := struct{ ID, State string }{ID: id}
	var polls []time.Duration
	for range 5000 {
		time.Sleep(every)
		req, _ := http.NewRequest("GET", url+"/jobs/"+v.ID, nil)
		req.Header.Set("Authorization", "Bearer bench")
		t := time.Now()
		resp, err := client.Do(req)
		if err != nil {
			return created, polls, len(polls), "", fmt.Errorf("poll: %w", err)
		}
		err = json.NewDecoder(resp.Body).Decode(&v)
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		polls = append(polls, time.Since(t))
		if err != nil {
			return created, polls, len(polls), "", fmt.Errorf("poll: decode: %w", err)
		}
		switch v.State {
		case "succeeded", "failed", "abandoned":
			return created, polls, len(polls), v.State, nil
		}
	}
	return created, polls, len(polls), v.State, fmt.Errorf("job %s never finished", v.ID)
}

// create posts job i, with a callback to callback unless it is "", and
// returns its id and the request's latency.
func create(client *http.Client, url string, i int, shape jobShape) (string, time.Duration, error) {
	pad := ""
	if shape.pad > 0 {
		pad = " " + strings.Repeat("x", shape.pad)
	}
	p, err := postJob(client, url, i, pad, shape.callback)
	return p.ID, p.Latency, err
}

// posted is a create's answer as a polling client uses it: the job's id
// and ETag, the raw Retry-After ("" when absent), and the request's
// latency.
type posted struct {
	ID, ETag, RetryAfter string
	Latency              time.Duration
}

// post posts job i, directive (for the fake model, "" for none) ending
// its prompt.
func post(client *http.Client, url string, i int, directive string) (posted, error) {
	return postJob(client, url, i, directive, "")
}

// postJob is post with a callback to callback unless it is "" (the
// terminal states, the default events).
func postJob(client *http.Client, url string, i int, directive, callback string) (posted, error) {
	extra := ""
	if callback != "" {
		extra = fmt.Sprintf(`,"callback_url":%q`, callback)
	}
	body := fmt.Sprintf(`{"input":{"messages":[{"role":"user","content":"benchmark job %d%s"}],"max_tokens":16}%s}`, i, directive, extra)
	req, _ := http.NewRequest("POST", url+"/jobs", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer bench")
	req.Header.Set("Idempotency-Key", fmt.Sprintf("bench-%d", i))
	req.Header.Set("Content-Type", "application/json")
	t0 := time.Now()
	resp, err := client.Do(req)
	if err != nil {
		return posted{}, fmt.Errorf("create: %w", err)
	}
	var v struct{ ID string }
	err = json.NewDecoder(resp.Body).Decode(&v)
	resp.Body.Close()
	p := posted{ID: v.ID, ETag: resp.Header.Get("ETag"), RetryAfter: resp.Header.Get("Retry-After"), Latency: time.Since(t0)}
	if err != nil || resp.StatusCode != http.StatusAccepted {
		return posted{Latency: p.Latency}, fmt.Errorf("create: status %d", resp.StatusCode)
	}
	return p, nil
}

// Percentile returns the p-th percentile (0..100) of ds.
func Percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	idx := int(float64(len(s)-1) * p / 100)
	return s[idx]
}

// Report renders a run as Markdown.
func (r Result) Report() string {
	var b strings.Builder
	fmt.Fprintf(&b, "jobs: %d in %s = %.1f jobs/s end to end (%d not succeeded, %d generations)\n",
		r.Jobs, r.Elapsed.Round(time.Millisecond), float64(r.Jobs)/r.Elapsed.Seconds(), r.NotSucceeded, r.Generations)
	fmt.Fprintf(&b, "create latency: p50 %s  p99 %s\n", Percentile(r.Create, 50).Round(10*time.Microsecond), Percentile(r.Create, 99).Round(10*time.Microsecond))
	fmt.Fprintf(&b, "poll latency:   p50 %s  p99 %s  (%d polls, %.2f per job)\n", Percentile(r.Poll, 50).Round(10*time.Microsecond),
		Percentile(r.Poll, 99).Round(10*time.Microsecond), r.Polls, float64(r.Polls)/float64(r.Jobs))
	ops := make([]string, 0, len(r.Calls))
	total, polls := 0, 0
	for op, n := range r.Calls {
		ops = append(ops, op)
		total += n
		if op == "DynamoDB.GetItem" {
			polls = n
		}
	}
	sort.Strings(ops)
	b.WriteString("\n| AWS operation | calls | per job |\n|---|---|---|\n")
	for _, op := range ops {
		fmt.Fprintf(&b, "| %s | %d | %.2f |\n", op, r.Calls[op], float64(r.Calls[op])/float64(r.Jobs))
	}
	fmt.Fprintf(&b, "| **total** | %d | %.2f |\n", total, float64(total)/float64(r.Jobs))
	fmt.Fprintf(&b, "| total without polls (GetItem) | %d | %.2f |\n", total-polls, float64(total-polls)/float64(r.Jobs))
	b.WriteString("\nReceiveMessage includes the pollers' empty long polls while idle.\n")
	return b.String()
}
