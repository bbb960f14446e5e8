// Command aijobs-bench measures the local stack (dev server on kumo, fake
// model): by default `make bench`'s suite (throughput, latency, AWS calls
// and GB-s per job, the emulator's ceiling, DynamoDB capacity units per
// job and the hottest key through the quota front, what a callback adds, runs by
// model latency, the functions' log bytes, $ per million jobs, the polls
// and lag of clients following Retry-After); with
// -coldstart, each function's size and init time; with -scale, jobs/s and
// p99 latency by client concurrency and worker memory per job in flight.
// See docs/benchmarks.md.
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
	return bench.Main(context.Background(), o, os.Stdout)
}
