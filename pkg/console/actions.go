package console

import (
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"sync"

	"github.com/aijobs/aijobs/pkg/job"
	"github.com/aijobs/aijobs/pkg/replay"
)

// cancel abandons a job on the operator's word, as its owner's cancel
// does (the same transition, with the job's own tenant), then shows it.
func (c *Console) cancel(w http.ResponseWriter, r *http.Request) {
	j, ok := c.readJob(w, r, "cancel")
	if !ok {
		return
	}
	id := j.ID
	now := c.cfg.Clock.Now()
	_, err := c.cfg.Store.Cancel(r.Context(), job.Cancel{ID: id, Tenant: j.Tenant, Now: now,
		ExpiresAt: c.cfg.Retention.ExpiresAt(job.Abandoned, now)})
	done := "cancelled"
	switch job.ErrorCode(err) {
	case "":
	case job.CodeConflict: // it ended meanwhile
		done = "already"
	default:
		c.unavailable(w, "cancel", err)
		return
	}
	c.log.Info("console action", "who", c.cfg.Who, "action", "cancel", "job", id, "tenant", j.Tenant, "result", done)
	http.Redirect(w, r, "/jobs/"+id+"?done="+done, http.StatusSeeOther)
}

// replayPage is a replay's dry run (with the form that confirms it) or
// its result.
type replayPage struct {
	page
	DryRun   bool
	IDs      []string
	Attempts int
	Outcomes []outcomeCount
	Total    int
	// MaxCost bounds what the replayed jobs may spend: what their budgets
	// have left (a replay never adds money).
	MaxCost job.Nanocents
	Group   string // the failure group it came from, said on the page
}

type outcomeCount struct {
	Outcome replay.Outcome
	Jobs    int
}

// maxReplay bounds one replay from the console; the CLI takes more.
const maxReplay = 10000

func (c *Console) replayPreview(w http.ResponseWriter, r *http.Request) { c.replay(w, r, true) }

func (c *Console) replayRun(w http.ResponseWriter, r *http.Request) { c.replay(w, r, false) }

// replay runs a dry run or the replay of the selection the form names.
func (c *Console) replay(w http.ResponseWriter, r *http.Request, dry bool) {
	if c.cfg.Replayer == nil {
		problem(w, http.StatusConflict, "replay_unavailable", "replay needs the queue URLs: start the console with --queue-url or AIJOBS_QUEUE_URL")
		return
	}
	attempts := 3
	if s := r.PostForm.Get("attempts"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > 100 {
			badRequest(w, fieldError{"attempts", "want 1 to 100"})
			return
		}
		attempts = n
	}
	p := replayPage{page: c.page(r, "failures", "Replay"), DryRun: dry, Attempts: attempts}
	p.Refresh = 0
	ids, group, err := c.selection(r)
	if err != nil {
		if errors.As(err, new(fieldError)) {
			badRequest(w, err)
		} else {
			c.unavailable(w, "replay", err)
		}
		return
	}
	p.IDs, p.Group = ids, group
	var mu sync.Mutex
	sum, err := c.cfg.Replayer.Jobs(r.Context(), ids, replay.Options{DryRun: dry, Attempts: attempts,
		Decided: func(j job.Job, o replay.Outcome) {
			if o == replay.Replayed {
				mu.Lock()
				p.MaxCost += j.Remaining()
				mu.Unlock()
			}
		}})
	if err != nil {
		c.unavailable(w, "replay", err)
		return
	}
	p.Total = sum.Total()
	for _, o := range replay.Outcomes() {
		if sum[o] > 0 {
			p.Outcomes = append(p.Outcomes, outcomeCount{o, sum[o]})
		}
	}
	action := "replay"
	if dry {
		action = "replay dry run"
	}
	c.log.Info("console action", "who", c.cfg.Who, "action", action, "jobs", len(ids), "group", group, "attempts", attempts,
		"outcomes", sum, "max_cost_cents", p.MaxCost.String())
	c.render(w, r, "replay.html", p)
}

// selection is the job ids a replay form names: ids, or a failure group
// (group=1 with since, until, class and input), read again from the
// failure index. A dry run's confirmation carries the ids it decided on,
// so what is confirmed is what was counted.
func (c *Console) selection(r *http.Request) ([]string, string, error) {
	f := r.PostForm
	var ids []string
	group := ""
	if f.Get("group") == "1" {
		v := url.Values{"since": {f.Get("since")}, "until": {f.Get("until")}, "class": {f.Get("class")}}
		q, err := groupQuery(v, c.cfg.Clock.Now())
		if err != nil {
			return nil, "", err
		}
		input := f.Get("input")
		group = "failures ended " + q.Since.UTC().Format("2006-01-02 15:04Z") + " to " + q.Until.UTC().Format("2006-01-02 15:04Z")
		if len(q.Classes) > 0 {
			group += ", class " + string(q.Classes[0])
		}
		if input != "" {
			group += ", input " + input
		}
		fs, err := c.readFailures(r, q, input)
		if err != nil {
			return nil, "", err
		}
		for _, x := range fs {
			ids = append(ids, x.ID)
		}
	} else {
		ids = f["ids"]
	}
	switch {
	case len(ids) == 0:
		return nil, "", fieldError{"ids", "no job selected"}
	case len(ids) > maxReplay:
		return nil, "", fieldError{"ids", "at most " + strconv.Itoa(maxReplay) + " jobs at once from the console; use aijobs replay"}
	}
	for _, id := range ids {
		if !job.ValidID(id) {
			return nil, "", fieldError{"ids", "not a job id"}
		}
	}
	return ids, group, nil
}
