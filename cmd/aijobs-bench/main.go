// Command aijobs-bench runs N jobs through the local stack (dev server on
// kumo, zero-latency fake model) and prints throughput, latency percentiles
// and AWS API calls per job; with -coldstart, each function's binary size
// and init time. `make bench` runs it; see docs/benchmarks.md.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/aijobs/aijobs/internal/bench"
	"github.com/aijobs/aijobs/internal/kumo"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "aijobs-bench:", err)
		os.Exit(1)
	}
}

func run() error {
	o := bench.Options{}
	flag.IntVar(&o.Jobs, "jobs", 500, "jobs to run")
	flag.IntVar(&o.Concurrency, "concurrency", 16, "clients creating and polling at once")
	flag.DurationVar(&o.PollEvery, "poll", 100*time.Millisecond, "poll interval")
	flag.DurationVar(&o.BatchWindow, "batch-window", 0, "batching window of the event source mapping")
	coldRuns := flag.Int("coldstart", 0, "instead of jobs: build each function and time this many cold starts of each")
	flag.Parse()
	if o.Endpoint = os.Getenv("AWS_ENDPOINT_URL"); o.Endpoint == "" {
		k, err := kumo.Start()
		if err != nil {
			return err
		}
		defer k.Stop()
		o.Endpoint = k.Endpoint
	}
	if *coldRuns > 0 {
		cs, err := bench.MeasureColdStarts(context.Background(), bench.ColdStartOptions{Endpoint: o.Endpoint, Runs: *coldRuns})
		fmt.Print(bench.ColdStartReport(cs))
		return err
	}
	r, err := bench.Run(context.Background(), o)
	fmt.Print(r.Report())
	return err
}
