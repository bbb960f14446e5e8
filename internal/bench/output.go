package bench

import (
	"os"
	"sync"
	"sync/atomic"
)

// output is what one function writes to its log stream: in Lambda,
// everything on its stdout (the EMF metric lines, pkg/emf) and its stderr
// (the JSON log lines), each line ingested by CloudWatch Logs. The bench
// reads both ends of a pipe apiece and counts the bytes.
type output struct {
	stdout, stderr pipeCount
}

// Written is the bytes a function wrote to its log stream: Stderr its log
// lines, Stdout its EMF metric lines.
type Written struct{ Stderr, Stdout int64 }

// Total is every byte CloudWatch Logs would ingest from the function (its
// own lines; Lambda's START/END/REPORT lines are priced apart, cost.go).
func (w Written) Total() int64 { return w.Stderr + w.Stdout }

// pipeCount is a pipe whose read end is drained and counted.
type pipeCount struct {
	r, w *os.File
	n    atomic.Int64
	done chan struct{}
}

func (p *pipeCount) open() error {
	var err error
	if p.r, p.w, err = os.Pipe(); err != nil {
		return err
	}
	p.done = make(chan struct{})
	go func() {
		defer close(p.done)
		buf := make([]byte, 64<<10)
		for {
			n, err := p.r.Read(buf)
			p.n.Add(int64(n))
			if err != nil {
				return
			}
		}
	}()
	return nil
}

// close ends the pipe once its writers are done and returns its count.
func (p *pipeCount) close() int64 {
	if p.w == nil {
		return 0
	}
	p.w.Close()
	<-p.done
	p.r.Close()
	p.w = nil
	return p.n.Load()
}

func newOutput() (*output, error) {
	o := &output{}
	if err := o.stdout.open(); err != nil {
		return nil, err
	}
	if err := o.stderr.open(); err != nil {
		o.stdout.close()
		return nil, err
	}
	return o, nil
}

// reset forgets what was written so far: the setup's lines (none at the
// shipped log level; a line still in the pipe when reset runs would be
// counted).
func (o *output) reset() { o.stdout.n.Store(0); o.stderr.n.Store(0) }

// close ends both pipes (every writer must be done) and returns what was
// written since the last reset.
func (o *output) close() Written {
	return Written{Stdout: o.stdout.close(), Stderr: o.stderr.close()}
}

// stdio serialises the swaps of os.Stdout and os.Stderr: runs build
// their stacks at once (ByLatency).
var stdio sync.Mutex

// capture runs build with os.Stdout and os.Stderr on o's pipes. The
// shared wiring (pkg/app/wire) builds the JSON logger on os.Stderr and
// the EMF writer on os.Stdout as it runs, and offers no writer of its own
// for either, so what build wires writes to o for good, exactly as the
// shipped function would write to its log stream; the bench's own output
// is untouched once build returns.
func (o *output) capture(build func() error) error {
	stdio.Lock()
	defer stdio.Unlock()
	stdout, stderr := os.Stdout, os.Stderr
	os.Stdout, os.Stderr = o.stdout.w, o.stderr.w
	defer func() { os.Stdout, os.Stderr = stdout, stderr }()
	return build()
}
