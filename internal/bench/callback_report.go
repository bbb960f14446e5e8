package bench

import (
	"fmt"
	"sort"
	"strings"
)

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
