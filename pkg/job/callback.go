package job

import (
	"slices"
	"time"
)

// Callback is where and when a job's owner asked to be told that the job
// changed (docs/webhooks.md). Polling stays the source of truth: a
// delivery is a hint that a newer version exists, so a lost one costs
// latency, never correctness.
type Callback struct {
	// URL is the https target, checked at create and again at each dial.
	URL string
	// Events are the states whose arrival is delivered; TerminalEvents
	// when the owner named none.
	Events []State
}

// TerminalEvents are the states delivered when a create names none.
var TerminalEvents = []State{Succeeded, Failed, Abandoned}

// CallbackEvents are the states a callback may ask for: the terminal ones
// and running (an attempt started).
var CallbackEvents = []State{Running, Succeeded, Failed, Abandoned}

// CanonicalEvents is es in the order CallbackEvents lists them, each once:
// the same events asked in any order make the same record.
func CanonicalEvents(es []State) []State {
	var out []State
	for _, s := range CallbackEvents {
		if slices.Contains(es, s) {
			out = append(out, s)
		}
	}
	return out
}

// Wants reports whether the arrival of state s is delivered.
func (c Callback) Wants(s State) bool {
	if c.URL == "" {
		return false
	}
	if len(c.Events) == 0 {
		return slices.Contains(TerminalEvents, s)
	}
	return slices.Contains(c.Events, s)
}

// Deliveries is what became of a job's callback deliveries: every POST
// counts in Attempts; DeliveredAt and DeliveredVersion name the newest
// version a receiver acknowledged with a 2xx.
type Deliveries struct {
	Attempts         int
	LastStatus       int // the HTTP status of the last attempt; 0: no answer
	DeliveredAt      time.Time
	DeliveredVersion int64
}

// Delivery records one callback delivery attempt for version Version of
// the job: Status is the receiver's HTTP status (0 when it never
// answered), Delivered whether it was a 2xx.
// Precondition: the job exists.
// Effect: deliveries.attempts + 1, deliveries.last_status = Status; when
// Delivered and Version > deliveries.delivered_version: delivered_at = Now,
// delivered_version = Version. A newer version already acknowledged is
// never replaced by an older one, whatever order the deliveries land in.
type Delivery struct {
	ID        string
	Now       time.Time
	Version   int64
	Status    int
	Delivered bool
}

// Apply returns j with d applied; the stores' conditional writes state the
// same effect.
func (d Delivery) Apply(j Job) Job {
	j.Deliveries.Attempts++
	j.Deliveries.LastStatus = d.Status
	if d.Delivered && d.Version > j.Deliveries.DeliveredVersion {
		j.Deliveries.DeliveredAt = Millis(d.Now)
		j.Deliveries.DeliveredVersion = d.Version
	}
	return touch(j, d.Now)
}
