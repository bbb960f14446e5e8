package bench

import (
	"fmt"
	"sort"
	"strings"
)

// logColumns are the function streams any of runs wrote to, in the
// order of functions, stderr (log lines) before stdout (EMF).
func logColumns(runs []Result) []string {
	var cols []string
	for _, f := range roles {
		for _, stream := range []string{"logs", "EMF"} {
			for _, r := range runs {
				if w := r.Written[f.name]; (stream == "logs" && w.Stderr > 0) || (stream == "EMF" && w.Stdout > 0) {
					cols = append(cols, f.name+" "+stream)
					break
				}
			}
		}
	}
	return cols
}

// LogReport renders what each run's functions wrote to their log streams
// per job, by function and stream, with Lambda's own lines beside them
// (assumed, cost.go) and what CloudWatch Logs charges for all of it.
func LogReport(names []string, runs []Result) string {
	cols := logColumns(runs)
	var b strings.Builder
	b.WriteString("| bytes per job | " + strings.Join(cols, " | ") + " | **functions' total** | Lambda's own lines (assumed) | $ per million jobs, functions' lines |\n")
	b.WriteString("|---|" + strings.Repeat("---|", len(cols)+3) + "\n")
	for i, r := range runs {
		b.WriteString("| " + names[i] + " |")
		var total int64
		for _, c := range cols {
			name, stream, _ := strings.Cut(c, " ")
			n := r.Written[name].Stderr
			if stream == "EMF" {
				n = r.Written[name].Stdout
			}
			total += n
			fmt.Fprintf(&b, " %.0f |", r.perJob(float64(n)))
		}
		fmt.Fprintf(&b, " **%.0f** | %.0f | %.2f |\n", r.perJob(float64(total)),
			r.perJob(float64(r.invocations()*platformLogBytesPerCall)), CostPerMillion(r).FunctionLogs)
	}
	return b.String()
}

// invocations are every metered Lambda invocation of r.
func (r Result) invocations() int {
	return r.Worker.Invocations + r.API.Invocations + r.NotifierStream.Invocations + r.NotifierDeliver.Invocations
}

// streamsPrefix names the DynamoDB Streams calls, free when a Lambda
// trigger makes them (cost.go) and so reported apart.
const streamsPrefix = "DynamoDB Streams."

// CallbackReport renders what a callback adds to a job: with against
// without, the same jobs and clients. AWS calls exclude the stream's
// reads, reported apart; invocations and GB-s are the notifier's.
func CallbackReport(without, with Result) string {
	var b strings.Builder
	priced := func(r Result) (n, streams int) {
		for op, c := range r.Calls {
			if strings.HasPrefix(op, streamsPrefix) {
				streams += c
			} else {
				n += c
			}
		}
		return n, streams
	}
	a, _ := priced(without)
	c, streams := priced(with)
	fmt.Fprintf(&b, "%d jobs with a callback, %d delivered (%d not succeeded)\n\n", with.Jobs, with.Delivered, with.NotSucceeded)
	fmt.Fprintf(&b, "**AWS calls per job (polls included, stream reads left out): %.2f without a callback, %.2f with one (+%.2f)**; "+
		"stream reads (free to a Lambda trigger, not priced): %.2f per job\n\n", without.perJob(float64(a)), with.perJob(float64(c)),
		with.perJob(float64(c))-without.perJob(float64(a)), with.perJob(float64(streams)))
	ops := map[string]bool{}
	for op := range without.Calls {
		ops[op] = true
	}
	for op := range with.Calls {
		ops[op] = true
	}
	sorted := make([]string, 0, len(ops))
	for op := range ops {
		sorted = append(sorted, op)
	}
	sort.Strings(sorted)
	b.WriteString("| AWS operation | per job without | per job with a callback | added |\n|---|---|---|---|\n")
	for _, op := range sorted {
		x, y := without.perJob(float64(without.Calls[op])), with.perJob(float64(with.Calls[op]))
		fmt.Fprintf(&b, "| %s | %.2f | %.2f | %+.2f |\n", op, x, y, y-x)
	}
	fmt.Fprintf(&b, "\nNotifier invocations per job: %.2f from the stream (%.5f GB-s), %.2f from the callback queue (%.5f GB-s)\n",
		with.perJob(float64(with.NotifierStream.Invocations)), with.perJob(with.NotifierStream.GBSeconds),
		with.perJob(float64(with.NotifierDeliver.Invocations)), with.perJob(with.NotifierDeliver.GBSeconds))
	return b.String()
}
