package bench

import (
	"fmt"
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
