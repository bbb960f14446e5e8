package job

import (
	"cmp"
	"slices"
	"strings"
	"time"
)

// FailureReport answers "what did this cost and which inputs caused it"
// for a set of failed and abandoned jobs: totals overall, per error class
// and per input hash (one input failing again and again shows up as one
// line), each sorted by cost, dearest first. Saved is what their calls
// cost less than in the standard lane, when the failures carry it.
type FailureReport struct {
	Jobs    int
	Cost    Nanocents
	Saved   Nanocents
	ByClass []Total
	ByInput []Total
}

// Total is the count and cost of the jobs sharing Key (a class, or an
// input hash with the classes its jobs ended with).
type Total struct {
	Key     string
	Jobs    int
	Cost    Nanocents
	Saved   Nanocents
	Classes []ErrorClass
}

// SummarizeFailures totals fs.
func SummarizeFailures(fs []Failure) FailureReport {
	var r FailureReport
	byClass, byInput := map[string]*Total{}, map[string]*Total{}
	add := func(m map[string]*Total, key string, f Failure) {
		t, ok := m[key]
		if !ok {
			t = &Total{Key: key}
			m[key] = t
		}
		t.Jobs++
		t.Cost += f.Cost
		t.Saved += f.Saved
		if !slices.Contains(t.Classes, f.Class) {
			t.Classes = append(t.Classes, f.Class)
			slices.Sort(t.Classes)
		}
	}
	for _, f := range fs {
		r.Jobs++
		r.Cost += f.Cost
		r.Saved += f.Saved
		add(byClass, string(f.Class), f)
		add(byInput, f.InputHash, f)
	}
	r.ByClass, r.ByInput = sorted(byClass), sorted(byInput)
	for i := range r.ByClass {
		r.ByClass[i].Classes = nil // the key says it
	}
	return r
}

func sorted(m map[string]*Total) []Total {
	out := make([]Total, 0, len(m))
	for _, t := range m {
		out = append(out, *t)
	}
	slices.SortFunc(out, func(a, b Total) int {
		switch {
		case a.Cost != b.Cost:
			return cmp.Compare(b.Cost, a.Cost)
		case a.Jobs != b.Jobs:
			return b.Jobs - a.Jobs
		}
		return strings.Compare(a.Key, b.Key)
	})
	return out
}

// DeadLetter is a message in the dead letter queue that names a job, and
// when that message was first sent (SQS keeps a message's SentTimestamp
// through a redrive): evidence that no worker will come back to the job,
// unless a replay since then already did.
type DeadLetter struct {
	JobID  string
	SentAt time.Time
}
