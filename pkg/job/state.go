package job

// State is where a job is in its life. The record, not the queue, is the
// source of truth: a message is only a hint that a job may need work.
type State string

const (
	// Queued jobs wait for a worker to claim them: new jobs, and jobs released
	// after a retryable error (their message comes back after the backoff).
	Queued State = "queued"
	// Running jobs are held by exactly one worker until lease_until. An
	// attempt whose lease expired is written off (WriteOff) before the job
	// is claimed again.
	Running State = "running"
	// Succeeded jobs hold a result. Terminal.
	Succeeded State = "succeeded"
	// Failed jobs were attempted and did not succeed: a permanent error, or
	// every allowed attempt used. Terminal (only an operator replay reopens).
	Failed State = "failed"
	// Abandoned jobs were given up before another attempt was worth making:
	// cancelled, past their deadline, or out of budget. Terminal.
	Abandoned State = "abandoned"
)

// Terminal reports whether the state never changes again on its own.
func (s State) Terminal() bool {
	return s == Succeeded || s == Failed || s == Abandoned
}

// Valid reports whether s is one of the five states.
func (s State) Valid() bool {
	switch s {
	case Queued, Running, Succeeded, Failed, Abandoned:
		return true
	}
	return false
}
