package bench

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"
)

// ScaleOptions are the scale runs' knobs (`make bench-scale`,
// docs/benchmarks.md "Scale").
type ScaleOptions struct {
	On       bool
	Endpoint string
	// PollEvery is the clients' poll interval.
	PollEvery     time.Duration
	Concurrencies []int
	// Each point runs max(MinJobs, JobsPerClient x clients) jobs, Runs
	// times, the points interleaved so the host's drift spreads over all.
	JobsPerClient, MinJobs, Runs int
	// BigJobs jobs at BigConcurrency clients is the long run (0: none).
	BigJobs, BigConcurrency int
	// MemJobs calls of MemLatency each are held in flight at once to
	// measure the worker's memory per job (0: none).
	MemJobs    int
	MemLatency time.Duration
	// SVG is where the curve's picture is written (none when empty).
	SVG string
}

// Flags registers the scale options' flags on fs, with their defaults.
func (o *ScaleOptions) Flags(fs *flag.FlagSet) {
	fs.BoolVar(&o.On, "scale", false, "instead of the suite: jobs/s and p99 create/poll latency by client concurrency, a long run, and worker memory per job in flight")
	fs.Func("scale-clients", "client concurrencies, comma-separated (default 1,2,4,...,256)", o.parseClients)
	fs.IntVar(&o.JobsPerClient, "scale-jobs-per-client", 8, "jobs per client at each concurrency")
	fs.IntVar(&o.MinJobs, "scale-min-jobs", 100, "fewest jobs at any concurrency")
	fs.IntVar(&o.Runs, "scale-runs", 3, "runs per concurrency (the report gives medians)")
	fs.IntVar(&o.BigJobs, "scale-big", 10000, "jobs of the long run (0: none)")
	fs.IntVar(&o.BigConcurrency, "scale-big-clients", 64, "clients of the long run")
	fs.IntVar(&o.MemJobs, "scale-mem-jobs", 1000, "jobs held in flight for the memory measurement (0: none)")
	fs.DurationVar(&o.MemLatency, "scale-mem-latency", 15*time.Second, "fake model latency of the memory measurement")
	fs.StringVar(&o.SVG, "scale-svg", "", "write the curve as an SVG picture to this file")
	o.Concurrencies = []int{1, 2, 4, 8, 16, 32, 64, 128, 256}
}

func (o *ScaleOptions) parseClients(v string) error {
	o.Concurrencies = nil
	for _, f := range strings.Split(v, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return fmt.Errorf("clients %q: want a positive integer", f)
		}
		o.Concurrencies = append(o.Concurrencies, n)
	}
	return nil
}

// ScaleSample is one run's throughput and latencies.
type ScaleSample struct {
	JobsPerSec, PollsPerJob                float64
	CreateP50, CreateP99, PollP50, PollP99 time.Duration
	NotSucceeded                           int
}

func sample(r Result) ScaleSample {
	return ScaleSample{JobsPerSec: jobsPerSecond(r), PollsPerJob: r.perJob(float64(r.Polls)), CreateP50: Percentile(r.Create, 50), CreateP99: Percentile(r.Create, 99),
		PollP50: Percentile(r.Poll, 50), PollP99: Percentile(r.Poll, 99), NotSucceeded: r.NotSucceeded}
}

// ScalePoint is one concurrency's runs.
type ScalePoint struct {
	Concurrency, Jobs int
	Runs              []ScaleSample
}

// Median is each figure's median over the runs, taken figure by figure
// (the median jobs/s and the median p99 may come from different runs);
// NotSucceeded is the sum.
func (p ScalePoint) Median() ScaleSample {
	var m ScaleSample
	if len(p.Runs) == 0 {
		return m
	}
	f := make([]float64, len(p.Runs))
	med := func(get func(ScaleSample) float64) float64 {
		for i, r := range p.Runs {
			f[i] = get(r)
		}
		sort.Float64s(f)
		if len(f)%2 == 1 {
			return f[len(f)/2]
		}
		return (f[len(f)/2-1] + f[len(f)/2]) / 2
	}
	dur := func(get func(ScaleSample) time.Duration) time.Duration {
		return time.Duration(med(func(s ScaleSample) float64 { return float64(get(s)) }))
	}
	m.JobsPerSec = med(func(s ScaleSample) float64 { return s.JobsPerSec })
	m.PollsPerJob = med(func(s ScaleSample) float64 { return s.PollsPerJob })
	m.CreateP50 = dur(func(s ScaleSample) time.Duration { return s.CreateP50 })
	m.CreateP99 = dur(func(s ScaleSample) time.Duration { return s.CreateP99 })
	m.PollP50 = dur(func(s ScaleSample) time.Duration { return s.PollP50 })
	m.PollP99 = dur(func(s ScaleSample) time.Duration { return s.PollP99 })
	for _, r := range p.Runs {
		m.NotSucceeded += r.NotSucceeded
	}
	return m
}

// ScaleResult is one `make bench-scale`.
type ScaleResult struct {
	Points []ScalePoint
	Big    ScalePoint
	Memory Memory
}

// Scale runs the curve, the long run and the memory measurement, prints
// the report to w and, when o.SVG is set, writes the curve's picture.
func Scale(ctx context.Context, o ScaleOptions, w io.Writer) error {
	s, err := RunScale(ctx, o)
	fmt.Fprint(w, s.Report(o))
	if err == nil && o.SVG != "" {
		if err = os.WriteFile(o.SVG, []byte(ScaleSVG(s.Points)), 0o644); err != nil {
			err = fmt.Errorf("scale: write the picture: %w", err)
		}
	}
	return err
}

// RunScale runs every concurrency Runs times (round by round, each run on
// its own dev server with the zero-latency model, as `make bench`'s end
// to end run), then the long run, then the memory measurement.
func RunScale(ctx context.Context, o ScaleOptions) (ScaleResult, error) {
	var s ScaleResult
	run := func(clients, jobs int) (ScaleSample, error) {
		r, err := Run(ctx, Options{Endpoint: o.Endpoint, Jobs: jobs, Concurrency: clients, PollEvery: o.PollEvery})
		return sample(r), err
	}
	for _, c := range o.Concurrencies {
		s.Points = append(s.Points, ScalePoint{Concurrency: c, Jobs: max(o.MinJobs, o.JobsPerClient*c)})
	}
	for range max(o.Runs, 1) {
		for i := range s.Points {
			p := &s.Points[i]
			r, err := run(p.Concurrency, p.Jobs)
			p.Runs = append(p.Runs, r)
			if err != nil {
				return s, fmt.Errorf("scale: %d clients: %w", p.Concurrency, err)
			}
		}
	}
	if o.BigJobs > 0 {
		s.Big = ScalePoint{Concurrency: o.BigConcurrency, Jobs: o.BigJobs}
		r, err := run(o.BigConcurrency, o.BigJobs)
		s.Big.Runs = append(s.Big.Runs, r)
		if err != nil {
			return s, fmt.Errorf("scale: long run: %w", err)
		}
	}
	if o.MemJobs > 0 {
		var err error
		if s.Memory, err = MeasureMemory(ctx, o.Endpoint, o.MemJobs, o.MemLatency); err != nil {
			return s, err
		}
	}
	return s, nil
}

// Report renders the scale runs as Markdown.
func (s ScaleResult) Report(o ScaleOptions) string {
	var b strings.Builder
	fmt.Fprintf(&b, "## Scale: by client concurrency (zero-latency model, poll every %s, medians of %d runs)\n\n", o.PollEvery, max(o.Runs, 1))
	head := "| clients | jobs per run | jobs/s | create p50 | create p99 | poll p50 | poll p99 | polls / job | jobs/s of each run | not succeeded |\n|---|---|---|---|---|---|---|---|---|---|\n"
	b.WriteString(head)
	row := func(p ScalePoint, label string) {
		m := p.Median()
		each := make([]string, len(p.Runs))
		for i, r := range p.Runs {
			each[i] = fmt.Sprintf("%.1f", r.JobsPerSec)
		}
		fmt.Fprintf(&b, "| %s | %d | **%.1f** | %s | **%s** | %s | **%s** | %.2f | %s | %d |\n", label, p.Jobs, m.JobsPerSec, ms(m.CreateP50), ms(m.CreateP99),
			ms(m.PollP50), ms(m.PollP99), m.PollsPerJob, strings.Join(each, ", "), m.NotSucceeded)
	}
	for _, p := range s.Points {
		row(p, strconv.Itoa(p.Concurrency))
	}
	if len(s.Big.Runs) > 0 {
		fmt.Fprintf(&b, "\nLong run (one run):\n\n%s", head)
		row(s.Big, strconv.Itoa(s.Big.Concurrency))
	}
	if s.Memory.InFlight > 0 {
		b.WriteString("\n")
		b.WriteString(s.Memory.Report())
	}
	return b.String()
}

// ms renders d in milliseconds with two significant decimals at most.
func ms(d time.Duration) string {
	v := float64(d) / float64(time.Millisecond)
	if v >= 100 {
		return fmt.Sprintf("%.0f ms", v)
	}
	if v >= 10 {
		return fmt.Sprintf("%.1f ms", v)
	}
	return fmt.Sprintf("%.2f ms", v)
}
