// Command aijobs-bench runs N jobs through the local stack (dev server on
// kumo, fake model) and prints throughput, latency percentiles, AWS API
// calls and Lambda GB-seconds per job, the emulator's ceiling for the same
// call mix, the same by model latency batched and one message per
// invocation, and dollars per million jobs; with -coldstart, each
// function's binary size and init time instead. `make bench` runs it; see
// docs/benchmarks.md.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"

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
	var o bench.SuiteOptions
	coldRuns := flag.Int("coldstart", 0, "instead of jobs: build each function and time this many cold starts of each")
	o.Flags(flag.CommandLine)
	flag.Parse()
	if o.Run.Endpoint = os.Getenv("AWS_ENDPOINT_URL"); o.Run.Endpoint == "" {
		k, err := kumo.Start()
		if err != nil {
			return err
		}
		defer k.Stop()
		o.Run.Endpoint = k.Endpoint
	}
	if *coldRuns > 0 {
		cs, err := bench.MeasureColdStarts(context.Background(), bench.ColdStartOptions{Endpoint: o.Run.Endpoint, Runs: *coldRuns})
		fmt.Print(bench.ColdStartReport(cs))
		return err
	}
	s, err := bench.RunSuite(context.Background(), o)
	fmt.Print(s.Report())
	return err
}
