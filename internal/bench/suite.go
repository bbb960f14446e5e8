package bench

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"
)

// SuiteOptions are `make bench`'s: the end-to-end run, its ceiling, the
// by-latency runs and the by-cadence runs.
type SuiteOptions struct {
	Run     Options
	Latency LatencyOptions
	Cadence CadenceOptions
	// CallbackJobs, when above zero, is how many jobs the end-to-end run
	// makes again, the same way, with callbacks on and a callback on
	// every job.
	CallbackJobs int
	// UnitsJobs, when above zero, is how many jobs the end-to-end run
	// makes again, the same way, through a quota front that meters
	// DynamoDB's capacity units (RunUnits).
	UnitsJobs int
	// Scale, when on, runs instead of the suite (`make bench-scale`).
	Scale ScaleOptions
	// InputSizes, when set, are the input sizes (bytes) whose heartbeat
	// write units are measured instead of the suite (UnitsByInput), on
	// UnitsJobs jobs each.
	InputSizes []int
	// ColdStarts, when above zero, is how many cold starts of each
	// function to time instead of the suite (`make bench-coldstart`).
	ColdStarts int
	// RIE is aws-lambda-rie, under which the cold starts are timed too
	// (empty: the stand-in alone).
	RIE string
}

// Flags registers the options' flags on fs, with their defaults.
func (o *SuiteOptions) Flags(fs *flag.FlagSet) {
	fs.IntVar(&o.Run.Jobs, "jobs", 500, "jobs to run end to end")
	fs.IntVar(&o.Run.Concurrency, "concurrency", 16, "clients creating and polling at once")
	fs.DurationVar(&o.Run.PollEvery, "poll", 100*time.Millisecond, "poll interval")
	fs.DurationVar(&o.Run.BatchWindow, "batch-window", 0, "batching window of the event source mapping")
	fs.IntVar(&o.CallbackJobs, "callback-jobs", 0, "jobs of the end-to-end run made again with a callback each (0: skip it)")
	fs.IntVar(&o.UnitsJobs, "units-jobs", 300, "jobs of the end-to-end run made again through the quota front, which meters DynamoDB's capacity units (0: skip it)")
	fs.Func("latencies", "fake model latencies of the by-latency runs, comma-separated (none: skip them; default 1s)", o.Latency.Parse)
	fs.IntVar(&o.Latency.Jobs, "latency-jobs", 50, "jobs per by-latency run, all in flight at once")
	fs.IntVar(&o.Latency.BatchSize, "latency-batch", 10, "batch size of the batched by-latency runs")
	fs.DurationVar(&o.Latency.BatchWindow, "latency-window", 2*time.Second, "batching window of the batched by-latency runs")
	o.Latency.Latencies = []time.Duration{time.Second}
	fs.Func("cadence", "fake model latencies of the by-cadence runs (clients polling as Retry-After says), comma-separated (none: skip them; default 1s)",
		o.Cadence.Parse)
	fs.IntVar(&o.Cadence.Jobs, "cadence-jobs", 20, "jobs per by-cadence run, all in flight at once")
	fs.IntVar(&o.Cadence.Warmup, "cadence-warmup", 20, "unmeasured jobs run the same way before each by-cadence run's (as many as it measures: the same queueing, so the same latencies)")
	o.Cadence.Latencies = []time.Duration{time.Second}
	o.Scale.Flags(fs)
	fs.Func("units-inputs", "instead of jobs: write units per heartbeat at these input sizes in bytes, comma-separated (e.g. 1024,102400,1048576,4194304), -units-jobs jobs each", func(v string) error {
		for _, f := range strings.Split(v, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil || n < 0 {
				return fmt.Errorf("input size %q: want bytes", f)
			}
			o.InputSizes = append(o.InputSizes, n)
		}
		return nil
	})
	fs.IntVar(&o.ColdStarts, "coldstart", 0, "instead of jobs: build each function and time this many cold starts of each")
	fs.StringVar(&o.RIE, "rie", os.Getenv("RIE_BIN"), "with -coldstart: AWS's aws-lambda-rie, under which each function's init is timed too (default $RIE_BIN; empty: the stand-in alone)")
}

// Main runs what o asks for against o.Run.Endpoint, the suite by default,
// and prints its report to w.
func Main(ctx context.Context, o SuiteOptions, w io.Writer) error {
	switch {
	case o.ColdStarts > 0:
		cs, err := MeasureColdStarts(ctx, ColdStartOptions{Endpoint: o.Run.Endpoint, Runs: o.ColdStarts, RIE: o.RIE})
		fmt.Fprint(w, ColdStartReport(cs))
		return err
	case len(o.InputSizes) > 0:
		r := o.Run
		r.Jobs = o.UnitsJobs
		us, err := UnitsByInput(ctx, r, o.InputSizes)
		fmt.Fprint(w, InputUnitsReport(us))
		return err
	case o.Scale.On:
		o.Scale.Endpoint, o.Scale.PollEvery = o.Run.Endpoint, o.Run.PollEvery
		return Scale(ctx, o.Scale, w)
	}
	s, err := RunSuite(ctx, o)
	fmt.Fprint(w, s.Report())
	return err
}

// Suite is one `make bench`.
type Suite struct {
	Run, Ceiling Result
	// Callback is the end-to-end run with a callback on every job (zero
	// Jobs when skipped).
	Callback Result
	// Units is the end-to-end run through the quota front (zero Jobs when
	// skipped).
	Units     Result
	ByLatency []LatencyRun
	ByCadence []CadenceRun
}

// RunSuite runs the end-to-end benchmark, then its ceiling (the same call
// mix straight at kumo, same clients, consumers and batch size), then the
// end-to-end run with callbacks (when asked for), then the by-latency
// runs, then the by-cadence runs (either none when no latency is given
// for it). The by-cadence runs go last and alone: their lag is
// a client's sleep, which other runs' load would blur.
func RunSuite(ctx context.Context, o SuiteOptions) (Suite, error) {
	var s Suite
	var err error
	if s.Run, err = Run(ctx, o.Run); err != nil {
		return s, err
	}
	if s.Ceiling, err = Ceiling(ctx, o.Run); err != nil {
		return s, err
	}
	if o.CallbackJobs > 0 {
		cb := o.Run
		cb.Jobs, cb.Callbacks = o.CallbackJobs, true
		if s.Callback, err = Run(ctx, cb); err != nil {
			return s, err
		}
	}
	if o.UnitsJobs > 0 {
		u := o.Run
		u.Jobs = o.UnitsJobs
		if s.Units, err = RunUnits(ctx, u); err != nil {
			return s, err
		}
	}
	if len(o.Latency.Latencies) > 0 {
		o.Latency.Endpoint, o.Latency.PollEvery = o.Run.Endpoint, o.Run.PollEvery
		if s.ByLatency, err = ByLatency(ctx, o.Latency); err != nil {
			return s, err
		}
	}
	if len(o.Cadence.Latencies) > 0 {
		o.Cadence.Endpoint = o.Run.Endpoint
		s.ByCadence, err = ByCadence(ctx, o.Cadence)
	}
	return s, err
}

// Report renders the suite as Markdown.
func (s Suite) Report() string {
	var b strings.Builder
	b.WriteString("## End to end (zero-latency model)\n\n")
	b.WriteString(s.Run.Report())
	fmt.Fprintf(&b, "\nLambda metered: worker %d invocations, %.5f GB-s per job at %d MB; API %d invocations, %.5f GB-s per job\n",
		s.Run.Worker.Invocations, s.Run.perJob(s.Run.Worker.GBSeconds), s.Run.WorkerMemoryMB, s.Run.API.Invocations, s.Run.perJob(s.Run.API.GBSeconds))
	e2e, ceil := jobsPerSecond(s.Run), jobsPerSecond(s.Ceiling)
	b.WriteString("\n## The emulator's ceiling (the same call mix straight at kumo, no aijobs code)\n\n")
	fmt.Fprintf(&b, "ceiling: %d jobs in %s = %.1f jobs/s, %.2f AWS calls per job (%.2f polls per job, %d not finished)\n",
		s.Ceiling.Jobs, s.Ceiling.Elapsed.Round(time.Millisecond), ceil, s.Ceiling.perJob(float64(s.Ceiling.calls())),
		s.Ceiling.perJob(float64(s.Ceiling.Polls)), s.Ceiling.NotSucceeded)
	fmt.Fprintf(&b, "**end to end / ceiling: %.1f / %.1f jobs/s = %.0f%%**\n", e2e, ceil, 100*e2e/max(ceil, 1e-9))
	names, runs := []string{"zero latency"}, []Result{s.Run}
	if s.Callback.Jobs > 0 {
		b.WriteString("\n## With a callback (zero-latency model, callbacks on, every job with a callback to a loopback receiver)\n\n")
		b.WriteString(CallbackReport(s.Run, s.Callback))
		names, runs = append(names, "zero latency, with a callback"), append(runs, s.Callback)
	}
	if s.Units.Jobs > 0 {
		fmt.Fprintf(&b, "\n## DynamoDB capacity units (the end-to-end run again, %d jobs, through the quota front: metered, never throttled; tenant limits on, never reached)\n\n", s.Units.Jobs)
		fmt.Fprintf(&b, "%.1f jobs/s through the front\n\n", jobsPerSecond(s.Units))
		b.WriteString(UnitsReport(s.Units.Units))
	}
	if len(s.ByLatency) > 0 {
		b.WriteString("\n## By model latency\n\n")
		b.WriteString(LatencyReport(s.ByLatency))
		for _, l := range s.ByLatency {
			names = append(names, l.Latency.String()+" batched", l.Latency.String()+" batch 1")
			runs = append(runs, l.Batched, l.Single)
		}
	}
	b.WriteString("\n## What the functions write to CloudWatch Logs (shipped log level and metrics)\n\n")
	b.WriteString(LogReport(names, runs))
	b.WriteString("\n## Dollars per million jobs (us-east-1 list prices, docs/benchmarks.md)\n\n")
	b.WriteString(CostReport(names, runs))
	if len(s.ByCadence) > 0 {
		b.WriteString("\n## Poll cadence and read cost (clients that wait what Retry-After says)\n\n")
		b.WriteString(CadenceReport(s.ByCadence))
	}
	return b.String()
}

func jobsPerSecond(r Result) float64 { return float64(r.Jobs) / max(r.Elapsed.Seconds(), 1e-9) }
