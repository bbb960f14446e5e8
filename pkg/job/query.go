package job

import (
	"encoding/base64"
	"strconv"
	"strings"
	"time"
)

// ListQuery selects one tenant's jobs, newest first (GET /jobs). State and
// Class, when set, filter; Since bounds the creation time from below;
// Cursor continues a previous page (opaque, from Page.Next).
type ListQuery struct {
	Tenant string
	State  State
	Class  ErrorClass
	Since  time.Time
	Limit  int
	Cursor string
}

// The page sizes of a list.
const (
	DefaultListLimit = 20
	MaxListLimit     = 100
)

// ClampLimit is n within 1..MaxListLimit, DefaultListLimit when unset.
func ClampLimit(n int) int {
	switch {
	case n <= 0:
		return DefaultListLimit
	case n > MaxListLimit:
		return MaxListLimit
	}
	return n
}

// Page is one page of a list; Next is empty on the last.
type Page struct {
	Jobs []Job
	Next string
}

// FailureQuery selects failed and abandoned jobs that ended in [Since,
// Until), by class (every class when Classes is empty) and input hash
// (any when empty).
type FailureQuery struct {
	Classes      []ErrorClass
	Since, Until time.Time
	InputHash    string
	// Saved asks for each job's Saved as well, which the failure index
	// does not keep: the DynamoDB store reads it from each job's record
	// (one more read a job), so only a report that shows it asks.
	Saved bool
}

// Failure is a failed or abandoned job as the failure index keeps it:
// enough to say what it cost and which input caused it, without the input.
type Failure struct {
	ID        string
	Tenant    string
	Model     string
	InputHash string
	State     State
	Class     ErrorClass
	Cost      Nanocents
	Attempts  int
	EndedAt   time.Time
	// Saved is what the job's calls cost less than in the standard lane
	// (the record's Saved), when the query asked for it.
	Saved Nanocents
}

// FailureOf is j as the failure index keeps it.
func FailureOf(j Job) Failure {
	return Failure{ID: j.ID, Tenant: j.Tenant, Model: j.Model, InputHash: j.InputHash, State: j.State,
		Class: j.ErrorClass, Cost: j.Cost, Attempts: j.Attempts, EndedAt: j.UpdatedAt}
}

// Position is where a list page ended: a job's creation time and id,
// together its place in newest-first order (the tenant index's sort key).
// Both stores encode it the same way, so a cursor means the same thing
// whichever store made it, and a page after it starts strictly below it
// whatever was created since.
type Position struct {
	CreatedAt time.Time
	ID        string
}

// Cursor is p as an opaque, URL-safe string. A job with no creation time
// is placed at the epoch, where the DynamoDB store's sort key puts it.
func (p Position) Cursor() string {
	ms := int64(0)
	if !p.CreatedAt.IsZero() {
		ms = p.CreatedAt.UnixMilli()
	}
	return base64.RawURLEncoding.EncodeToString([]byte(strconv.FormatInt(ms, 10) + "." + p.ID))
}

// ParseCursor reads a cursor back; anything else is an invalid_request
// naming the cursor field, never a store error.
func ParseCursor(c string) (Position, error) {
	bad := &Error{Code: CodeInvalidRequest, Field: "cursor", Message: "the cursor is not one this API returned"}
	b, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil {
		return Position{}, bad
	}
	ms, id, ok := strings.Cut(string(b), ".")
	if !ok || !ValidID(id) {
		// A cursor with no time, made for kumo before the tenant index
		// was sharded, is refused too: an id alone is no place in a merge.
		return Position{}, bad
	}
	n, err := strconv.ParseInt(ms, 10, 64)
	if err != nil || n < 0 {
		return Position{}, bad
	}
	return Position{CreatedAt: time.UnixMilli(n).UTC(), ID: id}, nil
}

// RecentQuery selects what an operator's overview counts: every job
// created at or after Since, and every job not finished yet whatever its
// age (so the oldest queued job is always among them).
type RecentQuery struct {
	Since time.Time
	// Now is the time of the query: a store that reads by creation day
	// reads Since's day to Now's (and the day after, for writers whose
	// clock is ahead).
	Now time.Time
}

// Includes reports whether j answers q.
func (q RecentQuery) Includes(j Job) bool {
	return !j.CreatedAt.Before(q.Since) || !j.State.Terminal()
}

// Peeked is what a poll shows of j (docs/api.md, "Polls"): all
// the view carries, and the tenant it is checked against. Left out are
// the input (up to the create limit, the largest attribute), the error
// detail, the lease, the backoff, and the bookkeeping of the reconciler,
// replay, write-offs, pending generations, the batch lane and the spend
// promise, which the view never shows. It is the one
// statement of a peek: the memory store answers it, DynamoDB's
// projection is held to it by a test, and the conformance suite expects
// it of every store.
func Peeked(j Job) Job {
	j.Input, j.InputRef, j.ErrorDetail, j.LeaseOwner = nil, nil, "", ""
	j.LeaseUntil, j.NotBefore, j.ReplayedAt, j.ExpiresAt = time.Time{}, time.Time{}, time.Time{}, time.Time{}
	j.RunTime, j.Nudges, j.WrittenOff, j.Pending = 0, 0, nil, nil
	j.Enlisted, j.EnlistedAt, j.Batch, j.SpendFirst = "", time.Time{}, "", ""
	return j
}

// Summary is what Recent answers of j, so every store answers the same:
// who and what it is, its state, attempts, money and deadline, and when
// it was created. These change only with the state, never with a
// heartbeat, which is what lets DynamoDB keep them in an index by
// creation day that a heartbeat never writes to (docs/architecture.md,
// "The job record"); the time a job ended is the failure index's, not
// the summary's.
func Summary(j Job) Job {
	return Job{ID: j.ID, Tenant: j.Tenant, RequestKey: j.RequestKey, InputHash: j.InputHash, Model: j.Model,
		State: j.State, ErrorClass: j.ErrorClass, ResultModel: j.ResultModel, Attempts: j.Attempts, MaxAttempts: j.MaxAttempts,
		Budget: j.Budget, Cost: j.Cost, RunTime: j.RunTime, Deadline: j.Deadline, Replays: j.Replays, CreatedAt: j.CreatedAt}
}

// FinishedQuery selects a sample of one route's finished jobs for
// `aijobs advise --from-table`: up to Limit succeeded or failed jobs of
// Model created at or after Since, newest first, so the sample is the
// route's latest behaviour and a store reads back only as far as it must
// (from Now's day, and the day after for writers whose clock is ahead).
type FinishedQuery struct {
	Model      string
	Limit      int
	Since, Now time.Time
}

// Includes reports whether j answers q, the limit aside.
func (q FinishedQuery) Includes(j Job) bool {
	return j.Model == q.Model && (j.State == Succeeded || j.State == Failed) && !j.CreatedAt.Before(q.Since)
}
