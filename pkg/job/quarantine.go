package job

import "time"

// A quarantine remembers an input that failed in a way no retry can
// change (ErrorClass.Deterministic), for one tenant and route, so the
// same input sent again is refused at create and costs nothing
// (docs/quarantine.md, "Quarantine"). It names the job that failed, so
// the caller can read why.
type Quarantine struct {
	Tenant    string
	Model     string
	InputHash string
	Class     ErrorClass
	// JobID is the job whose failure put the input in quarantine.
	JobID string
	// At is when it failed; Until is when the quarantine lifts by itself.
	At, Until time.Time
}

// QuarantineKey names one quarantine: a tenant's input on a route.
type QuarantineKey struct {
	Tenant, Model, InputHash string
}

// Key is q's key.
func (q Quarantine) Key() QuarantineKey {
	return QuarantineKey{Tenant: q.Tenant, Model: q.Model, InputHash: q.InputHash}
}

// Holds reports whether q still refuses creates at now.
func (q Quarantine) Holds(now time.Time) bool { return now.Before(q.Until) }

// QuarantineOf is the quarantine a job's end puts its input in, for the
// span for, or false when its class is not deterministic (another
// attempt, or the same input sent again, might succeed).
func QuarantineOf(j Job, class ErrorClass, now time.Time, span time.Duration) (Quarantine, bool) {
	if !class.Deterministic() || span <= 0 {
		return Quarantine{}, false
	}
	return Quarantine{Tenant: j.Tenant, Model: j.Model, InputHash: j.InputHash, Class: class, JobID: j.ID,
		At: Millis(now), Until: Millis(now.Add(span))}, true
}
