package job

import (
	"strconv"
	"strings"
	"time"
)

// Slot is one attempt's place among its tenant's jobs in flight
// (docs/fairness.md, "Tenant fairness"): an attempt runs only while
// its tenant has fewer than Limit others, so one tenant's backlog cannot
// take every worker. A slot names its job and lasts until Until, the
// latest its attempt can run: a worker that dies leaves a slot that ends
// by itself. A store may divide Limit over items (docs/fairness.md, "How
// slots scale"), so a Leave should say the Limit its Enter used: one
// write then; a Leave without it (the worker's leave of a queued place)
// costs the store a search.
type Slot struct {
	Tenant string
	JobID  string
	Now    time.Time
	Until  time.Time
	Limit  int
}

// Entry is how the slot is written: job id and end, so that any reader
// can tell a slot that has ended without asking anyone.
func (s Slot) Entry() string { return s.JobID + "@" + strconv.FormatInt(s.Until.UnixMilli(), 10) }

// SlotEnded reports whether the slot written as entry has ended at now
// (an entry that cannot be read has: it holds nobody's place).
func SlotEnded(entry string, now time.Time) bool {
	_, ms, ok := strings.Cut(entry, "@")
	n, err := strconv.ParseInt(ms, 10, 64)
	return !ok || err != nil || !time.UnixMilli(n).After(now)
}
