package bench

import (
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestRetryAfterReadsDelaySecondsOnly(t *testing.T) {
	for _, c := range []struct {
		h    string
		want time.Duration
		ok   bool
	}{
		{"1", time.Second, true},
		{" 30 ", 30 * time.Second, true},
		{"0", 0, true},
		{"", 0, false},
		{"-1", 0, false},
		{"1.5", 0, false},
		{"2s", 0, false},
		// The HTTP-date form (RFC 9110 10.2.3), which the API never sends.
		{"Wed, 21 Oct 2015 07:28:00 GMT", 0, false},
		{"99999999999", 0, false},
	} {
		got, ok := retryAfter(c.h)
		if got != c.want || ok != c.ok {
			t.Errorf("retryAfter(%q) = %s, %v; want %s, %v", c.h, got, ok, c.want, c.ok)
		}
	}
}

// The jobs' latencies cover l ± 10% evenly, so their mean is l.
func TestJobLatencySpreadsEvenlyAroundTheRunsLatency(t *testing.T) {
	const n = 20
	l := 10 * time.Second
	var sum time.Duration
	for i := range n {
		d := jobLatency(l, i, n)
		if d < 9*time.Second || d >= 11*time.Second {
			t.Errorf("job %d: %s, want within [9s, 11s)", i, d)
		}
		if i > 0 {
			if step := d - jobLatency(l, i-1, n); step != 100*time.Millisecond {
				t.Errorf("job %d: %s after the one before, want 100ms", i, step)
			}
		}
		sum += d
	}
	if mean := sum / n; mean != l {
		t.Errorf("mean %s, want %s", mean, l)
	}
	if got := jobLatency(l, 0, 1); got != l {
		t.Errorf("one job: %s, want %s", got, l)
	}
}

// A run gathers its clients: lags only for the jobs seen ending,
// Retry-After values tallied, and the rest counted as never terminal.
func TestCadenceRunAddsClients(t *testing.T) {
	r := CadenceRun{Jobs: 3}
	r.add(polled{postRetryAfter: true, polls: 4, notModified: 2, retryAfters: []int{1, 1, 2}, terminal: true, lag: 300 * time.Millisecond})
	r.add(polled{polls: 2, retryAfters: []int{2}, terminal: true, lag: time.Second})
	r.add(polled{polls: 7, notModified: 7, retryAfters: []int{5}})
	if r.PostRetryAfter != 1 || r.Polls != 13 || r.NotModified != 9 || r.NotTerminal != 1 {
		t.Errorf("202s with Retry-After %d, polls %d, 304s %d, not terminal %d; want 1, 13, 9, 1", r.PostRetryAfter, r.Polls, r.NotModified, r.NotTerminal)
	}
	if len(r.Lags) != 2 || r.Lags[0] != 300*time.Millisecond || r.Lags[1] != time.Second {
		t.Errorf("lags %v, want [300ms 1s]", r.Lags)
	}
	if got := tally(r.RetryAfters); got != "1x2, 2x2, 5x1" {
		t.Errorf("Retry-After tally %q, want 1x2, 2x2, 5x1", got)
	}
}

// Twenty lags of 0.1 s to 2.0 s: the 50th percentile is the 10th
// smallest, the 90th the 18th (Percentile takes the value at rank
// floor((n-1)·p)), whatever order they came in.
func TestLagPercentiles(t *testing.T) {
	var lags []time.Duration
	for i := 20; i >= 1; i-- {
		lags = append(lags, time.Duration(i)*100*time.Millisecond)
	}
	if got := Percentile(lags, 50); got != time.Second {
		t.Errorf("p50 %s, want 1s", got)
	}
	if got := Percentile(lags, 90); got != 1800*time.Millisecond {
		t.Errorf("p90 %s, want 1.8s", got)
	}
	if lags[0] != 2*time.Second {
		t.Errorf("Percentile reordered its input: %v", lags)
	}
}

// Five polls a job, each an API Gateway request ($1.00 per million) and an
// API Lambda request ($0.20), and 60 consistent plus 40 eventually
// consistent GetItems over 20 jobs: 4 read units a job at $0.125 per
// million.
func TestPollCostPerMillion(t *testing.T) {
	r := CadenceRun{Jobs: 20, Polls: 100, GetItems: GetItemSplit{Consistent: 60, Eventual: 40}}
	if got, want := r.PollCostPerMillion(), 5*(1.00+0.20)+4*0.125; math.Abs(got-want) > 1e-9 {
		t.Errorf("$%.6f per million jobs, want $%.6f", got, want)
	}
}

func TestCadenceReportRendersOneRowPerLatency(t *testing.T) {
	lags := make([]time.Duration, 20)
	for i := range lags {
		lags[i] = time.Duration(i+1) * 100 * time.Millisecond
	}
	runs := []CadenceRun{
		{Latency: 10 * time.Second, Jobs: 20, PostRetryAfter: 20, Polls: 100, NotModified: 40, RetryAfters: map[int]int{2: 30, 1: 50},
			Lags: lags, GetItems: GetItemSplit{Consistent: 60, Eventual: 40}},
		{Latency: time.Second, Jobs: 20, Polls: 40, Lags: lags[:19], GetItems: GetItemSplit{Consistent: 40}, NotTerminal: 1},
	}
	got := CadenceReport(runs)
	for _, want := range []string{
		"| 10s | 20 | 20 | 1x50, 2x30 | 5.00 | 2.00 | 1.00 s | 1.80 s | 0.60 | 0.40 | 6.50 |\n",
		"| 1s | 20 | 0 | none | 2.00 | 0.00 | 1.00 s | 1.70 s | 1.00 | 0.00 | 2.65 |\n",
		"**Jobs never seen terminal: 1 of 20 at 1s.**",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("report lacks %q:\n%s", want, got)
		}
	}
	if rows := strings.Count(got, "\n| "); rows != 2 { // the separator row starts "|---"
		t.Errorf("%d table rows after the header, want 2:\n%s", rows, got)
	}
}

// fakeAPI answers POST /jobs and then GET /jobs/{id} from a script, and
// records each GET's If-None-Match.
type fakeAPI struct {
	postHeaders map[string]string
	gets        []func(w http.ResponseWriter)
	mu          sync.Mutex
	inm         []string
	at          []time.Time
}

func (f *fakeAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == "POST" {
		for k, v := range f.postHeaders {
			w.Header().Set(k, v)
		}
		w.WriteHeader(http.StatusAccepted)
		fmt.Fprint(w, `{"id":"j1","state":"queued"}`)
		return
	}
	f.mu.Lock()
	n := len(f.inm)
	f.inm, f.at = append(f.inm, r.Header.Get("If-None-Match")), append(f.at, time.Now())
	f.mu.Unlock()
	f.gets[n](w)
}

func view(w http.ResponseWriter, etag, retryAfter, state string, updated time.Time) {
	w.Header().Set("ETag", etag)
	if retryAfter != "" {
		w.Header().Set("Retry-After", retryAfter)
	}
	fmt.Fprintf(w, `{"id":"j1","state":%q,"updated_at":%q}`, state, updated.UTC().Format("2006-01-02T15:04:05.000Z07:00"))
}

// The client sends the last ETag it saw (the 202's first), counts a 304
// as a poll, waits what Retry-After says (0 here, to keep the test
// fast), and measures its lag from the terminal view's updated_at.
func TestPoliteJobFollowsETagAndRetryAfter(t *testing.T) {
	var ended time.Time
	f := &fakeAPI{postHeaders: map[string]string{"ETag": `"1"`, "Retry-After": "0"}}
	f.gets = []func(http.ResponseWriter){
		func(w http.ResponseWriter) { view(w, `"2"`, "0", "running", time.Now()) },
		func(w http.ResponseWriter) {
			w.Header().Set("ETag", `"2"`)
			w.Header().Set("Retry-After", "0")
			w.WriteHeader(http.StatusNotModified)
		},
		func(w http.ResponseWriter) {
			ended = time.Now().Add(-250 * time.Millisecond)
			view(w, `"3"`, "", "succeeded", ended)
		},
	}
	srv := httptest.NewServer(f)
	defer srv.Close()
	p, err := politeJob(t.Context(), srv.Client(), srv.URL, 0, "")
	if err != nil {
		t.Fatal(err)
	}
	if !p.postRetryAfter || p.polls != 3 || p.notModified != 1 || !p.terminal {
		t.Errorf("got %+v; want the 202's Retry-After seen, 3 polls, 1 of them a 304, terminal", p)
	}
	if want := []string{`"1"`, `"2"`, `"2"`}; strings.Join(f.inm, " ") != strings.Join(want, " ") {
		t.Errorf("If-None-Match sent %q, want %q", f.inm, want)
	}
	// updated_at has milliseconds, so the lag is 250 ms give or take 1 ms
	// plus the answer's trip.
	if p.lag < 249*time.Millisecond || p.lag > 500*time.Millisecond {
		t.Errorf("lag %s, want about 250ms", p.lag)
	}
	if want := []int{0, 0}; fmt.Sprint(p.retryAfters) != fmt.Sprint(want) {
		t.Errorf("Retry-After values %v, want %v", p.retryAfters, want)
	}
}

// Without a Retry-After (none on the 202, none on the running job's
// answer), the client waits a second each time.
func TestPoliteJobWaitsASecondWithoutRetryAfter(t *testing.T) {
	f := &fakeAPI{}
	f.gets = []func(http.ResponseWriter){
		func(w http.ResponseWriter) { view(w, `"2"`, "", "running", time.Now()) },
		func(w http.ResponseWriter) { view(w, `"3"`, "", "failed", time.Now()) },
	}
	srv := httptest.NewServer(f)
	defer srv.Close()
	start := time.Now()
	p, err := politeJob(t.Context(), srv.Client(), srv.URL, 0, "")
	if err != nil {
		t.Fatal(err)
	}
	if p.postRetryAfter || p.polls != 2 || !p.terminal || len(p.retryAfters) != 0 {
		t.Errorf("got %+v; want no Retry-After seen, 2 polls, terminal (failed is terminal)", p)
	}
	if first := f.at[0].Sub(start); first < time.Second {
		t.Errorf("first poll %s after the start, want at least the 1 s default", first)
	}
	if gap := f.at[1].Sub(f.at[0]); gap < time.Second {
		t.Errorf("second poll %s after the first, want at least the 1 s default", gap)
	}
}
