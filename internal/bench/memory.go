package bench

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aijobs/aijobs/pkg/model"
)

// Memory is the worker's memory with many jobs in flight against none:
// the Go runtime's heap in use (HeapInuse) and goroutine stacks
// (StackInuse), each read right after a forced collection, so what is
// left is live.
type Memory struct {
	Jobs, InFlight                     int
	Latency                            time.Duration
	HeapBefore, HeapDuring             uint64
	StackBefore, StackDuring           uint64
	GoroutinesBefore, GoroutinesDuring int
}

// PerJob is the heap and stack grown between the two readings, per job
// in flight, in bytes.
func (m Memory) PerJob() float64 {
	grown := float64(m.HeapDuring+m.StackDuring) - float64(m.HeapBefore+m.StackBefore)
	return grown / float64(max(m.InFlight, 1))
}

// Report renders the measurement as Markdown.
func (m Memory) Report() string {
	var b strings.Builder
	fmt.Fprintf(&b, "## Worker memory per job in flight (%d jobs, fake model at %s, one run)\n\n", m.Jobs, m.Latency)
	b.WriteString("| | no job | jobs in flight | grown | per job in flight |\n|---|---|---|---|---|\n")
	per := func(a, z uint64) string { return kb((float64(z) - float64(a)) / float64(max(m.InFlight, 1))) }
	fmt.Fprintf(&b, "| model calls in flight | 0 | %d | | |\n", m.InFlight)
	fmt.Fprintf(&b, "| heap in use (HeapInuse) | %s | %s | %s | %s |\n", mib(m.HeapBefore), mib(m.HeapDuring), mib(m.HeapDuring-min(m.HeapBefore, m.HeapDuring)), per(m.HeapBefore, m.HeapDuring))
	fmt.Fprintf(&b, "| goroutine stacks (StackInuse) | %s | %s | %s | %s |\n", mib(m.StackBefore), mib(m.StackDuring), mib(m.StackDuring-min(m.StackBefore, m.StackDuring)), per(m.StackBefore, m.StackDuring))
	fmt.Fprintf(&b, "| goroutines | %d | %d | %d | %.1f |\n", m.GoroutinesBefore, m.GoroutinesDuring, m.GoroutinesDuring-m.GoroutinesBefore,
		float64(m.GoroutinesDuring-m.GoroutinesBefore)/float64(max(m.InFlight, 1)))
	fmt.Fprintf(&b, "| **heap + stacks** | | | | **%s** |\n", kb(m.PerJob()))
	return b.String()
}

func mib(v uint64) string { return fmt.Sprintf("%.1f MiB", float64(v)/(1<<20)) }
func kb(v float64) string { return fmt.Sprintf("%.1f KiB", v/(1<<10)) }

// MeasureMemory starts a dev server with enough concurrent invocations
// for every job at once (batches of 10, twice over), reads the memory once its pollers
// idle, creates jobs jobs whose model calls take latency, and reads it
// again when every call is in flight (or at half the latency, with those
// that are), with no client request open: the difference is the worker's
// (and the job's record in the API's answer, long since collected). It
// then lets the calls finish. The server, the clients and kumo's client
// side share this process, so both readings include their fixed costs;
// kumo itself is another process.
func MeasureMemory(ctx context.Context, endpoint string, jobs int, latency time.Duration) (Memory, error) {
	m := Memory{Jobs: jobs, Latency: latency}
	var live atomic.Int64
	// A 2 s batching window (the shipped one) fills the batches: the
	// creates arrive far faster than 10 a second, so the jobs sit ten to
	// an invocation as in a loaded stack, not one or two to each of many.
	o := Options{Endpoint: endpoint, Jobs: jobs, Concurrency: 32, BatchSize: 10, BatchWindow: 2 * time.Second,
		MaxConcurrency: max(2*((jobs+9)/10), 2), Latency: latency}
	st, err := startStack(ctx, o, func(p model.Provider) model.Provider { return counting{p, &live} })
	if err != nil {
		return m, err
	}
	defer st.stop()
	time.Sleep(2 * time.Second) // every poller in its long poll
	m.HeapBefore, m.StackBefore, m.GoroutinesBefore = readMemory()

	start := time.Now()
	var wg sync.WaitGroup
	errs := make(chan error, jobs)
	sem := make(chan struct{}, o.Concurrency)
	for i := range jobs {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			if _, _, err := create(st.client, st.url, i, jobShape{}); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return m, fmt.Errorf("memory: %w", err)
	}
	st.client.CloseIdleConnections()
	for live.Load() < int64(jobs) && time.Since(start) < latency/2 {
		time.Sleep(20 * time.Millisecond)
	}
	m.InFlight = int(live.Load())
	m.HeapDuring, m.StackDuring, m.GoroutinesDuring = readMemory()
	for st.fake.TotalGenerations() < jobs && time.Since(start) < 2*latency+30*time.Second {
		time.Sleep(100 * time.Millisecond)
	}
	if n := st.fake.TotalGenerations(); n < jobs {
		return m, fmt.Errorf("memory: %d of %d jobs generated", n, jobs)
	}
	return m, nil
}

func readMemory() (heap, stack uint64, goroutines int) {
	runtime.GC()
	var s runtime.MemStats
	runtime.ReadMemStats(&s)
	return s.HeapInuse, s.StackInuse, runtime.NumGoroutine()
}

// counting is a model that counts its calls in flight.
type counting struct {
	model.Provider
	live *atomic.Int64
}

func (c counting) Generate(ctx context.Context, r model.Request) (model.Response, error) {
	c.live.Add(1)
	defer c.live.Add(-1)
	return c.Provider.Generate(ctx, r)
}
