package console

import (
	"errors"
	"net/http"
	"net/url"
	"slices"
	"time"

	"github.com/aijobs/aijobs/pkg/job"
)

// failuresPage is the failures command's report: totals by class and by
// input hash, dearest first, over a range of end times.
type failuresPage struct {
	page
	Since, Until string // as given, for the form and the links
	From, To     time.Time
	Class        job.ErrorClass
	Report       job.FailureReport
}

// groupPage is one failure group's jobs: a class or an input hash.
type groupPage struct {
	failuresPage
	Input    string
	Jobs     []job.Failure
	Shown    int
	Replayer bool
}

// maxGroupRows bounds a group page; the replay of the whole group still
// takes every job.
const maxGroupRows = 500

func (c *Console) failures(w http.ResponseWriter, r *http.Request) {
	p, q, ok := c.failureQuery(w, r, "Failures")
	if !ok {
		return
	}
	fs, err := c.readFailures(r, q, "")
	if err != nil {
		c.unavailable(w, "failures", err)
		return
	}
	p.Report = job.SummarizeFailures(fs)
	c.render(w, r, "failures.html", p)
}

func (c *Console) failureGroup(w http.ResponseWriter, r *http.Request) {
	fp, q, ok := c.failureQuery(w, r, "Failure group")
	if !ok {
		return
	}
	p := groupPage{failuresPage: fp, Input: r.URL.Query().Get("input"), Replayer: c.cfg.Replayer != nil}
	fs, err := c.readFailures(r, q, p.Input)
	if err != nil {
		c.unavailable(w, "failure group", err)
		return
	}
	slices.SortFunc(fs, func(a, b job.Failure) int { return b.EndedAt.Compare(a.EndedAt) })
	p.Report = job.SummarizeFailures(fs)
	p.Shown = min(len(fs), maxGroupRows)
	p.Jobs = fs[:p.Shown]
	c.render(w, r, "group.html", p)
}

// failureQuery reads since, until and class from the URL (a duration
// back from now or an RFC 3339 time; default the last day).
func (c *Console) failureQuery(w http.ResponseWriter, r *http.Request, title string) (failuresPage, job.FailureQuery, bool) {
	v := r.URL.Query()
	p := failuresPage{page: c.page(r, "failures", title), Since: v.Get("since"), Until: v.Get("until"), Class: job.ErrorClass(v.Get("class"))}
	p.Refresh = 0 // a report an operator reads; reload to refresh
	if p.Since == "" {
		p.Since = "24h"
	}
	q, err := groupQuery(v, p.Now)
	if err != nil {
		badRequest(w, err)
		return p, q, false
	}
	p.From, p.To = q.Since, q.Until
	q.Saved = true // the pages show money saved beside money lost
	return p, q, true
}

// groupQuery is the failure query a failures page or a replay of a group
// names: since, until, class.
func groupQuery(v url.Values, now time.Time) (job.FailureQuery, error) {
	var q job.FailureQuery
	since := v.Get("since")
	if since == "" {
		since = "24h"
	}
	var err error
	if q.Since, err = when("since", since, now); err != nil {
		return q, err
	}
	q.Until = now
	if u := v.Get("until"); u != "" {
		if q.Until, err = when("until", u, now); err != nil {
			return q, err
		}
	}
	if !q.Since.Before(q.Until) {
		return q, fieldError{"since", "since must be before until"}
	}
	if cl := v.Get("class"); cl != "" {
		if !job.ErrorClass(cl).Valid() {
			return q, fieldError{"class", "not an error class (docs/errors.md)"}
		}
		q.Classes = []job.ErrorClass{job.ErrorClass(cl)}
	}
	return q, nil
}

// readFailures runs q on the failure index, only one input hash's jobs
// when input is set (the store filters them before reading what each
// saved).
func (c *Console) readFailures(r *http.Request, q job.FailureQuery, input string) ([]job.Failure, error) {
	var fs []job.Failure
	q.InputHash = input
	err := c.cfg.Store.Failures(r.Context(), q, func(f job.Failure) error {
		fs = append(fs, f)
		return nil
	})
	return fs, err
}

// when reads a time: RFC 3339, or a duration back from now.
func when(field, s string, now time.Time) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		return time.Time{}, fieldError{field, "want an RFC 3339 time or a positive duration back from now, such as 24h"}
	}
	return now.Add(-d), nil
}

// fieldError is bad input in one field: a 400 invalid_request.
type fieldError struct{ field, msg string }

func (e fieldError) Error() string { return e.field + ": " + e.msg }

// badRequest answers 400 invalid_request naming the field at fault.
func badRequest(w http.ResponseWriter, err error) {
	var fe fieldError
	if errors.As(err, &fe) {
		problem(w, http.StatusBadRequest, "invalid_request", fe.field+": "+fe.msg)
		return
	}
	problem(w, http.StatusBadRequest, "invalid_request", "the request could not be read")
}
