package chaos

import (
	"bufio"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Event is one injected fault: its kind, where it was injected (api,
// worker-a, baseline, ...), the operation or route it hit and the job it
// concerned when that is known.
type Event struct {
	Kind  string
	Where string
	Op    string
	Job   string
}

// Recorder is told of every fault the moment it is injected, so a worker
// killed a moment later has still reported it.
type Recorder interface{ Fault(Event) }

// Tally counts faults by kind and keeps each job's, for the report and
// for the diagnosis of a job that broke an invariant.
// It also keeps the clients' receipts of the model's answers.
type Tally struct {
	mu       sync.Mutex
	byKind   map[string]int
	byJob    map[string][]string
	receipts map[string]Receipt
	// read are the answers each reader read whole, and when the harness
	// heard of it; readers are, by generation, who read it whole.
	read    map[string][]read
	readers map[string][]string
}

type read struct {
	gen string
	at  time.Time
}

// NewTally returns an empty tally.
func NewTally() *Tally {
	return &Tally{byKind: map[string]int{}, byJob: map[string][]string{}, receipts: map[string]Receipt{}, read: map[string][]read{},
		readers: map[string][]string{}}
}

// Received records what a client read of a generation. A background
// generation is read by every poll that finds it completed, possibly by
// two workers (the one that made it, one resuming it), some reads cut:
// once one read it whole it stays read whole, so the check counts
// generations, not reads.
func (t *Tally) Received(r Receipt) {
	t.mu.Lock()
	if old, ok := t.receipts[r.Gen]; !ok || !old.Complete || r.Complete {
		t.receipts[r.Gen] = r
	}
	if r.Complete {
		t.read[r.Where] = append(t.read[r.Where], read{gen: r.Gen, at: time.Now()})
		if !slices.Contains(t.readers[r.Gen], r.Where) {
			t.readers[r.Gen] = append(t.readers[r.Gen], r.Where)
		}
	}
	t.mu.Unlock()
}

// Readers are who read generation gen whole, in the order they said so.
func (t *Tally) Readers(gen string) []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return slices.Clone(t.readers[gen])
}

// ReadSince lists the generations where read whole since t.
func (t *Tally) ReadSince(where string, since time.Time) []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []string
	for _, r := range t.read[where] {
		if !r.at.Before(since) {
			out = append(out, r.gen)
		}
	}
	return out
}

// Receipt is what a client read of generation gen, if it said.
func (t *Tally) Receipt(gen string) (Receipt, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	r, ok := t.receipts[gen]
	return r, ok
}

// Fault records e.
func (t *Tally) Fault(e Event) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.byKind[e.Kind]++
	if e.Job != "" {
		t.byJob[e.Job] = append(t.byJob[e.Job], e.Kind+"@"+e.Where+":"+e.Op)
	}
}

// Counts are the faults by kind.
func (t *Tally) Counts() map[string]int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return maps.Clone(t.byKind)
}

// Of lists the faults that concerned job id, in order.
func (t *Tally) Of(id string) []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return slices.Clone(t.byJob[id])
}

// Total is the number of faults injected.
func (t *Tally) Total() int {
	n := 0
	for _, c := range t.Counts() {
		n += c
	}
	return n
}

// linePrefix marks a fault event on a worker process's stdout, and
// receiptPrefix a receipt.
const (
	linePrefix    = "chaos-fault\t"
	receiptPrefix = "chaos-receipt\t"
)

// LineRecorder writes events and receipts as lines, the way a worker
// process reports them to the harness.
type LineRecorder struct {
	mu sync.Mutex
	w  io.Writer
}

// Fault writes e as one line.
func (l *LineRecorder) Fault(e Event) {
	l.mu.Lock()
	defer l.mu.Unlock()
	fmt.Fprintf(l.w, "%s%s\t%s\t%s\t%s\n", linePrefix, e.Kind, e.Where, e.Op, e.Job)
}

// Received writes r as one line.
func (l *LineRecorder) Received(r Receipt) {
	l.mu.Lock()
	defer l.mu.Unlock()
	fmt.Fprintf(l.w, "%s%s\t%d\t%t\t%s\n", receiptPrefix, r.Gen, r.Chunks, r.Complete, r.Where)
}

// readEvents forwards the event and receipt lines of r to t until r ends.
func readEvents(r io.Reader, t *Tally) {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		if line, ok := strings.CutPrefix(sc.Text(), linePrefix); ok {
			if f := strings.Split(line, "\t"); len(f) == 4 {
				t.Fault(Event{Kind: f[0], Where: f[1], Op: f[2], Job: f[3]})
			}
		}
		if line, ok := strings.CutPrefix(sc.Text(), receiptPrefix); ok {
			if f := strings.Split(line, "\t"); len(f) == 4 {
				n, _ := strconv.Atoi(f[1])
				t.Received(Receipt{Gen: f[0], Chunks: n, Complete: f[2] == "true", Where: f[3]})
			}
		}
	}
}
