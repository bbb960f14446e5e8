package console

import (
	"context"
	"net/http"
	"strconv"
	"time"

	"github.com/aijobs/aijobs/pkg/job"
)

// jobsPage is the filtered job list.
type jobsPage struct {
	page
	Tenant, Since string
	State         job.State
	Class         job.ErrorClass
	Jobs          []job.Job
	Matched       int
	Next          string // a tenant list's next cursor
	Source        string // where the rows came from, said on the page
	Replayer      bool
}

// maxJobRows bounds the rows of a jobs page read from the overview's
// snapshot (a tenant's list pages with a cursor instead).
const maxJobRows = 200

func (c *Console) jobs(w http.ResponseWriter, r *http.Request) {
	v := r.URL.Query()
	p := jobsPage{page: c.page(r, "jobs", "Jobs"), Tenant: v.Get("tenant"), Since: v.Get("since"),
		State: job.State(v.Get("state")), Class: job.ErrorClass(v.Get("class")), Replayer: c.cfg.Replayer != nil}
	var since time.Time
	switch {
	case p.State != "" && !p.State.Valid():
		badRequest(w, fieldError{"state", "want queued, running, succeeded, failed or abandoned"})
		return
	case p.Class != "" && !p.Class.Valid():
		badRequest(w, fieldError{"class", "not an error class (docs/errors.md)"})
		return
	case p.Since != "":
		t, err := when("since", p.Since, p.Now)
		if err != nil {
			badRequest(w, err)
			return
		}
		since = t
	}
	if p.Tenant != "" {
		if !c.tenantJobs(w, r, &p, since) {
			return
		}
		c.render(w, r, "jobs.html", p)
		return
	}
	snap, err := c.snap.get(r.Context())
	if err != nil {
		c.unavailable(w, "jobs", err)
		return
	}
	p.Source = "every tenant's jobs created in the last " + c.cfg.Window.String() + ", and every unfinished one, newest first"
	for _, j := range snap.Jobs {
		if j.CreatedAt.Before(since) || (p.State != "" && j.State != p.State) || (p.Class != "" && j.ErrorClass != p.Class) {
			continue
		}
		p.Matched++
		if len(p.Jobs) < maxJobRows {
			p.Jobs = append(p.Jobs, j)
		}
	}
	c.render(w, r, "jobs.html", p)
}

// tenantJobs reads one page of a tenant's list (the tenant index).
func (c *Console) tenantJobs(w http.ResponseWriter, r *http.Request, p *jobsPage, since time.Time) bool {
	v := r.URL.Query()
	limit := job.MaxListLimit
	if s := v.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			badRequest(w, fieldError{"limit", "want a positive number"})
			return false
		}
		limit = n
	}
	pg, err := c.cfg.Store.List(r.Context(), job.ListQuery{Tenant: p.Tenant, State: p.State, Class: p.Class, Since: since,
		Limit: limit, Cursor: v.Get("cursor")})
	switch job.ErrorCode(err) {
	case "":
	case job.CodeInvalidRequest:
		badRequest(w, fieldError{"cursor", "not a cursor this page gave"})
		return false
	default:
		c.unavailable(w, "jobs", err)
		return false
	}
	p.Jobs, p.Matched, p.Next = pg.Jobs, len(pg.Jobs), pg.Next
	p.Source = "tenant " + p.Tenant + "'s jobs from its index, newest first, one page"
	return true
}

// jobView is one job's page.
type jobView struct {
	page
	Job       job.Job
	Remaining job.Nanocents
	Done      string // what an action just did
	Replayer  bool
	// ResultURL links an answer kept in the payload store, valid until
	// ResultExpires; ResultLink says why there is no link when there is
	// none.
	ResultURL     string
	ResultExpires time.Time
	ResultLink    string
	// Input is what the page shows of the input: its parts by type and
	// size, its schema's name, never a part's bytes.
	Input inputView
}

// ResultLinks signs a short-lived link that reads an answer kept in the
// payload store (pkg/app/payloads' Links).
type ResultLinks interface {
	ResultLink(ctx context.Context, key string, ttl time.Duration) (url string, expires time.Time, err error)
}

// resultLinkTTL is how long a job page's link works: as long as a poll's
// (wire.ResultLinkTTL); a refresh of the page signs a fresh one.
const resultLinkTTL = 15 * time.Minute

// linkResult sets p's link to a large answer of j, or says why not.
func (c *Console) linkResult(ctx context.Context, p *jobView, j job.Job) {
	switch {
	case j.ResultRef == nil:
	case c.cfg.ResultLinks == nil:
		p.ResultLink = "no link: the console was started without the payload bucket (AIJOBS_PAYLOAD_BUCKET)"
	default:
		url, expires, err := c.cfg.ResultLinks.ResultLink(ctx, j.ResultRef.Key, resultLinkTTL)
		if err != nil {
			p.ResultLink = "no link: the payload store could not sign one (" + err.Error() + ")"
			return
		}
		p.ResultURL, p.ResultExpires = url, expires
	}
}

func (c *Console) jobPage(w http.ResponseWriter, r *http.Request) {
	j, ok := c.readJob(w, r, "job")
	if !ok {
		return
	}
	id := j.ID
	p := jobView{page: c.page(r, "jobs", "Job "+id), Job: j, Remaining: j.Remaining(), Replayer: c.cfg.Replayer != nil, Input: viewInput(j.Input)}
	c.linkResult(r.Context(), &p, j)
	switch r.URL.Query().Get("done") {
	case "cancelled":
		p.Done = "Cancelled."
	case "already":
		p.Done = "Not cancelled: the job had already " + string(j.State) + "."
	}
	if j.State.Terminal() {
		p.Refresh = 0
	}
	c.render(w, r, "job.html", p)
}

// readJob reads the job the path names, or answers why not: 400 for a
// malformed id, 404 for an unknown one, 503 when the store fails.
func (c *Console) readJob(w http.ResponseWriter, r *http.Request, what string) (job.Job, bool) {
	id := r.PathValue("id")
	if !job.ValidID(id) {
		badRequest(w, fieldError{"id", "not a job id"})
		return job.Job{}, false
	}
	j, err := c.cfg.Store.Get(r.Context(), id)
	switch job.ErrorCode(err) {
	case "":
		return j, true
	case job.CodeNotFound:
		problem(w, http.StatusNotFound, "not_found", "no such job")
	default:
		c.unavailable(w, what, err)
	}
	return job.Job{}, false
}
