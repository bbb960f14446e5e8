package console

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/aijobs/aijobs/pkg/job"
)

// snapshot is what the overview and the tenant-less jobs page read: the
// store's recent jobs and the queues' depths, at one time.
type snapshot struct {
	At   time.Time
	Jobs []job.Job
	// Failures are the jobs that failed or were abandoned in the last
	// day, from the failure index: when a job ended is the index's, not
	// a summary's.
	Failures []job.Failure
	// Backlog and DeadLetters are the queues' depths; -1 when unknown.
	Backlog, DeadLetters int
	// DLQRate is dead letters arriving a minute, from the depths the
	// console saw over the last ten minutes; -1 until it has two.
	DLQRate float64
}

// depthSample is the dead letter queue's depth at a time.
type depthSample struct {
	at    time.Time
	depth int
}

// snapshots caches the last snapshot for one refresh interval, so any
// number of open pages cost one set of reads per interval.
type snapshots struct {
	cfg     *Config
	mu      sync.Mutex
	last    *snapshot
	samples []depthSample
}

// rateSpan is how far back the dead letter arrival rate looks.
const rateSpan = 10 * time.Minute

// get answers the cached snapshot, reading a new one when it is older
// than the refresh interval.
func (s *snapshots) get(ctx context.Context) (*snapshot, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.cfg.Clock.Now()
	if s.last != nil && now.Sub(s.last.At) < s.cfg.Refresh {
		return s.last, nil
	}
	snap := &snapshot{At: now, Backlog: -1, DeadLetters: -1, DLQRate: -1}
	err := s.cfg.Store.Recent(ctx, job.RecentQuery{Since: now.Add(-s.cfg.Window), Now: now}, func(j job.Job) error {
		snap.Jobs = append(snap.Jobs, j)
		return nil
	})
	if err != nil {
		return nil, err
	}
	err = s.cfg.Store.Failures(ctx, job.FailureQuery{Since: now.Add(-lastDay.length()), Until: now}, func(f job.Failure) error {
		snap.Failures = append(snap.Failures, f)
		return nil
	})
	if err != nil {
		return nil, err
	}
	slices.SortFunc(snap.Jobs, newestFirst)
	if s.cfg.Queue != nil {
		if n, err := s.cfg.Queue.Backlog(ctx); err == nil {
			snap.Backlog = n
		}
	}
	if s.cfg.DeadLetters != nil {
		if n, err := s.cfg.DeadLetters.Backlog(ctx); err == nil {
			snap.DeadLetters = n
			s.samples = append(s.samples, depthSample{now, n})
			s.samples = slices.DeleteFunc(s.samples, func(d depthSample) bool { return now.Sub(d.at) > rateSpan })
			snap.DLQRate = arrivals(s.samples)
		}
	}
	s.last = snap
	return snap, nil
}

// arrivals is the dead letters that arrived a minute over samples: the
// sum of the depth's rises (a fall is a replay or a delete, not an
// arrival), over the time they span. A lower bound: arrivals hidden by a
// delete in the same interval are not seen.
func arrivals(samples []depthSample) float64 {
	if len(samples) < 2 {
		return -1
	}
	rise := 0
	for i := 1; i < len(samples); i++ {
		if d := samples[i].depth - samples[i-1].depth; d > 0 {
			rise += d
		}
	}
	span := samples[len(samples)-1].at.Sub(samples[0].at)
	if span <= 0 {
		return -1
	}
	return float64(rise) / span.Minutes()
}

func newestFirst(a, b job.Job) int {
	if c := b.CreatedAt.Compare(a.CreatedAt); c != 0 {
		return c
	}
	if a.ID > b.ID {
		return -1
	}
	if a.ID < b.ID {
		return 1
	}
	return 0
}
