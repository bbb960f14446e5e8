package api

import (
	"slices"
	"sync"
	"time"

	"github.com/aijobs/aijobs/pkg/job"
)

// Learning a route's latency (docs/api.md, "Polls").
const (
	// latencySamples is how many of a route's latest jobs its marks are
	// taken over: enough to shrug off a few retried or queued-behind jobs,
	// few enough to follow a provider that slows down within minutes.
	latencySamples = 64
	// latencyMinSamples is how many a route needs before its marks are
	// used; until then the age rule alone answers.
	latencyMinSamples = 5
	// latencyRemembered bounds the ids remembered so that a job polled
	// again once finished is counted once.
	latencyRemembered = 4096
)

// routeLatency learns each route's end-to-end latency, created to
// succeeded, from the finished jobs this API process shows, so that
// Retry-After can send a poller back when its job is likely done (at the
// median, then the 90th and 99th percentiles) instead of every second. It costs no AWS call: every sample is a record a poll
// read anyway. Each Lambda instance learns on its own and starts without
// samples (the age rule answers until it has some).
type routeLatency struct {
	routes map[string]job.Route // only these are learned: memory stays bounded

	mu     sync.Mutex
	byName map[string]*samples
	seen   map[string]struct{}
	order  []string // seen ids, oldest first
}

// samples is a ring of a route's latest latencies, and the marks they
// give, computed when a sample arrives (once per finished job) rather
// than on every poll that reads them.
type samples struct {
	d     []time.Duration
	next  int
	marks []time.Duration
}

func newRouteLatency(routes map[string]job.Route) *routeLatency {
	return &routeLatency{routes: routes, byName: map[string]*samples{}, seen: map[string]struct{}{}}
}

// observe counts j once if it is a sample: succeeded without a replay (a
// replay restarts the clock the record does not show) and without a
// callback delivery (recording one moves updated_at past the end).
func (l *routeLatency) observe(j job.Job) {
	if j.State != job.Succeeded || j.Replays > 0 || j.Deliveries.Attempts > 0 || !j.UpdatedAt.After(j.CreatedAt) {
		return
	}
	if _, known := l.routes[j.Model]; !known {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, dup := l.seen[j.ID]; dup {
		return
	}
	l.seen[j.ID] = struct{}{}
	l.order = append(l.order, j.ID)
	if len(l.order) > latencyRemembered {
		delete(l.seen, l.order[0])
		l.order = l.order[1:]
	}
	s := l.byName[j.Model]
	if s == nil {
		s = &samples{}
		l.byName[j.Model] = s
	}
	d := j.UpdatedAt.Sub(j.CreatedAt)
	if len(s.d) < latencySamples {
		s.d = append(s.d, d)
	} else {
		s.d[s.next] = d
	}
	s.next = (s.next + 1) % latencySamples
	if len(s.d) >= latencyMinSamples {
		d := slices.Clone(s.d)
		slices.Sort(d)
		s.marks = []time.Duration{d[len(d)/2], d[len(d)*9/10], d[len(d)*99/100]}
	}
}

// marks are the route's median, 90th and 99th percentile latencies over
// its latest samples, nil until it has latencyMinSamples: the times a
// poll is sent back to.
func (l *routeLatency) marks(route string) []time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	if s := l.byName[route]; s != nil {
		return s.marks // replaced, never changed in place: safe to share
	}
	return nil
}
