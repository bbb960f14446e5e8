package chaos

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/aijobs/aijobs/internal/kumo"
)

// Main is the aijobs-chaos command: `aijobs-chaos [-seed N] [-jobs N]
// [-duration D]` runs a seeded run (against AWS_ENDPOINT_URL, or a kumo it
// starts) and prints its report; `aijobs-chaos worker` is the worker
// process the run starts from the same binary. It returns the exit code:
// 0 when every invariant held, 1 when one broke, 2 when the run could not
// run.
func Main(ctx context.Context, args []string, getenv func(string) string, out io.Writer) int {
	if len(args) > 0 && args[0] == "worker" {
		if err := Worker(ctx, getenv, out); err != nil {
			fmt.Fprintln(os.Stderr, "aijobs-chaos worker:", err)
			return 2
		}
		return 0
	}
	o := DefaultOptions()
	fs := flag.NewFlagSet("aijobs-chaos", flag.ContinueOnError)
	seed := fs.Uint64("seed", 0, "seed of the run's schedule (0: a new one, printed)")
	fs.IntVar(&o.Jobs, "jobs", o.Jobs, "jobs to run")
	fs.DurationVar(&o.Load, "duration", o.Load, "how long jobs arrive and faults are injected (the run then drains and checks)")
	fs.IntVar(&o.Tenants, "tenants", o.Tenants, "tenants the jobs are spread over")
	fs.StringVar(&o.LogDir, "logs", "", "directory for the processes' logs (default: a new temporary one)")
	profile := fs.String("profile", "default", "fault rates: default or harsh (docs/chaos.md)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	apply, ok := Profiles[*profile]
	if !ok {
		fmt.Fprintf(out, "aijobs-chaos: no profile %q (default, harsh)\n", *profile)
		return 2
	}
	apply(&o)
	if o.Seed = Seed(*seed); o.Seed == 0 {
		o.Seed = Seed(time.Now().UnixNano() % 1_000_000_000)
	}
	fmt.Fprintf(out, "aijobs chaos: seed %d\n", o.Seed)
	exe, err := os.Executable()
	if err != nil {
		fmt.Fprintln(out, "aijobs-chaos:", err)
		return 2
	}
	o.WorkerBin, o.Progress = exe, out
	if o.Endpoint = getenv("AWS_ENDPOINT_URL"); o.Endpoint == "" {
		k, err := kumo.Start()
		if err != nil {
			fmt.Fprintln(out, "aijobs-chaos:", err)
			return 2
		}
		defer k.Stop()
		o.Endpoint = k.Endpoint
	}
	r, err := Run(ctx, o)
	if err != nil {
		fmt.Fprintln(out, "aijobs-chaos:", err)
		return 2
	}
	fmt.Fprint(out, r.String())
	if r.Failed() {
		return 1
	}
	return 0
}
