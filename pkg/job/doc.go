// Package job is the domain of aijobs: the job record, its state machine, the
// error classes a model call can end in, and the pure rules that decide what
// happens next. It imports nothing from AWS so that the rules can be read,
// tested and reused (API, worker, reconciler, CLI) without a cloud in sight.
//
// Every change to a record is described by one transition value (Claim,
// Heartbeat, HoldMore, Succeed, Release, End, Cancel, Replay, Nudge; the
// table in docs/architecture.md, "State machine"). A store applies a
// transition as
// ONE conditional write whose condition is the transition's precondition, and
// answers a refused precondition with an *Error of code Conflict carrying the
// record as it now is, so the caller can decide without a read-modify-write.
package job
