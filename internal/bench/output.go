package bench

import "sync/atomic"

// output is what one function writes to its log stream: in Lambda,
// everything on its stdout (the EMF metric lines, pkg/emf) and its stderr
// (the JSON log lines), each line ingested by CloudWatch Logs. The bench
// wires each function's logger and EMF writer on an output's two counters
// (app.Options.Logger and MetricsOutput) and counts the bytes.
type output struct {
	stdout, stderr counter
}

// Written is the bytes a function wrote to its log stream: Stderr its log
// lines, Stdout its EMF metric lines.
type Written struct{ Stderr, Stdout int64 }

// Total is every byte CloudWatch Logs would ingest from the function (its
// own lines; Lambda's START/END/REPORT lines are priced apart, cost.go).
func (w Written) Total() int64 { return w.Stderr + w.Stdout }

// counter is an io.Writer that keeps only the count of what it was given.
type counter struct{ n atomic.Int64 }

func (c *counter) Write(p []byte) (int, error) {
	c.n.Add(int64(len(p)))
	return len(p), nil
}

// reset forgets what was written so far (the setup's lines).
func (o *output) reset() { o.stdout.n.Store(0); o.stderr.n.Store(0) }

// written is what was written since the last reset.
func (o *output) written() Written {
	return Written{Stdout: o.stdout.n.Load(), Stderr: o.stderr.n.Load()}
}
