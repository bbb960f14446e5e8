package chaos

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aijobs/aijobs/pkg/job"
	"github.com/aijobs/aijobs/pkg/wire"
)

// jobRun is what the harness learned about one job while driving it.
type jobRun struct {
	plan JobPlan
	id   string

	mu sync.Mutex
	// accepted: the API answered 200 or 202 to a create.
	accepted bool
	// spendRefused: the API refused the create 429 spend_limit (the
	// tenant had nothing left of a period's limit): nothing to poll.
	spendRefused bool
	// statuses are the create answers, in order (0: no answer).
	statuses []int
	// lostAt is when the API died between PutItem and SendMessage.
	lostAt time.Time
	// touchedAt is when the lost job's record first changed (nudge or
	// claim), as the harness's watcher saw it.
	touchedAt time.Time
	// seen is the poller's last view.
	seen  view
	polls int
	// created is when the client first sent the create; ended when it
	// first saw the job finished (a poll or a cancel's answer).
	created, ended time.Time
}

// view is the part of a job's view the pollers check.
type view struct {
	ID        string `json:"id"`
	State     string `json:"state"`
	Version   int64  `json:"version"`
	UpdatedAt string `json:"updated_at"`
}

func (v view) terminal() bool { return job.State(v.State).Terminal() }

// clients drive the API as a tenant's code would: create with an
// Idempotency-Key (retrying 5xx and lost answers with the same key, except
// when the API died mid-create, when the client never retries), poll each
// job until it is finished, cancel some, list their jobs, and probe other
// tenants' jobs.
type clients struct {
	url  string
	http *http.Client
	runs []*jobRun
	// byTenant are each tenant's job ids, for the isolation checks.
	byTenant map[string]map[string]bool

	mu        sync.Mutex
	backwards []string // invariant 5
	leaks     []string // invariant 6
	checks5   int
	checks6   int
}

func newClients(url string, plans []JobPlan) *clients {
	c := &clients{url: url, byTenant: map[string]map[string]bool{},
		http: &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 64}}}
	for _, p := range plans {
		r := &jobRun{plan: p, id: p.ID()}
		c.runs = append(c.runs, r)
		if c.byTenant[p.Tenant] == nil {
			c.byTenant[p.Tenant] = map[string]bool{}
		}
		c.byTenant[p.Tenant][r.id] = true
	}
	return c
}

type answer struct {
	status int
	header http.Header
	body   []byte
}

// request is one request a client makes to the API, as tenant.
type request struct {
	method, path, tenant string
	headers              map[string]string
	body                 string
}

func (c *clients) do(ctx context.Context, r request) (answer, error) {
	req, err := http.NewRequestWithContext(ctx, r.method, c.url+r.path, strings.NewReader(r.body))
	if err != nil {
		return answer{}, err
	}
	req.Header.Set("Authorization", "Bearer "+r.tenant)
	if r.body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range r.headers {
		req.Header.Set(k, v)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return answer{}, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return answer{status: resp.StatusCode, header: resp.Header, body: b}, err
}

func createBody(p JobPlan) string {
	b := map[string]any{"model": p.Route,
		"input": map[string]any{"messages": []any{map[string]string{"role": "user", "content": p.Content("aj")}}, "max_tokens": p.MaxTokens}}
	if p.Budget != "" {
		b["budget_cents"] = json.RawMessage(p.Budget)
	}
	if p.Deadline > 0 {
		b["deadline_seconds"] = p.Deadline
	}
	if len(p.Lanes) > 0 {
		b["lanes"] = p.Lanes
	}
	out, _ := json.Marshal(b)
	return string(out)
}

// create posts the job; it reports whether the job may exist.
func (c *clients) create(ctx context.Context, r *jobRun, killed func(string)) bool {
	p := r.plan
	if p.APIKilled {
		killed(r.id)
	}
	for try := range 8 {
		sent := time.Now()
		a, err := c.do(ctx, request{"POST", "/jobs", p.Tenant, map[string]string{"Idempotency-Key": p.Key}, createBody(p)})
		r.mu.Lock()
		if r.created.IsZero() {
			r.created = sent
		}
		r.statuses = append(r.statuses, a.status)
		if p.APIKilled {
			// The API process died after its PutItem: the client saw its
			// connection drop and, like many, never retries.
			r.lostAt = time.Now()
			r.mu.Unlock()
			return true
		}
		r.mu.Unlock()
		if err == nil && (a.status == http.StatusAccepted || a.status == http.StatusOK) {
			var v view
			if json.Unmarshal(a.body, &v) == nil && v.ID != r.id {
				c.leak(fmt.Sprintf("create of %s (tenant %s, key %s) answered job %s", r.id, p.Tenant, p.Key, v.ID))
			}
			r.mu.Lock()
			r.accepted = true
			r.mu.Unlock()
			c.observe(r, v)
			return true
		}
		if err == nil && a.status < 500 && a.status != http.StatusTooManyRequests {
			return false // refused: nothing to poll
		}
		if err == nil && a.status == http.StatusTooManyRequests && problemCode(a.body) == wire.CodeSpendLimit {
			r.mu.Lock()
			r.spendRefused = true
			r.mu.Unlock()
			return false // refused until the period ends: nothing to poll
		}
		if sleep(ctx, time.Duration(200<<min(try, 4))*time.Millisecond) != nil {
			return true
		}
	}
	return true
}

// poll follows the job until it is finished or ctx ends, cancelling it at
// its plan's time.
func (c *clients) poll(ctx context.Context, r *jobRun, start time.Time) {
	p := r.plan
	cancelAt := time.Time{}
	if p.CancelAfter > 0 {
		cancelAt = start.Add(p.CancelAfter)
	}
	for ctx.Err() == nil {
		if !cancelAt.IsZero() && time.Now().After(cancelAt) {
			cancelAt = time.Time{}
			if a, err := c.do(ctx, request{method: "POST", path: "/jobs/" + r.id + "/cancel", tenant: p.Tenant}); err == nil && a.status == http.StatusOK {
				var v view
				if json.Unmarshal(a.body, &v) == nil {
					c.observe(r, v)
				}
			}
		}
		r.mu.Lock()
		last := r.seen
		r.polls++
		r.mu.Unlock()
		h := map[string]string{}
		if last.Version > 0 {
			h["If-None-Match"] = `"` + strconv.FormatInt(last.Version, 10) + `"`
		}
		a, err := c.do(ctx, request{method: "GET", path: "/jobs/" + r.id, tenant: p.Tenant, headers: h})
		if err == nil && a.status == http.StatusOK {
			var v view
			if json.Unmarshal(a.body, &v) == nil {
				c.observe(r, v)
				if v.terminal() {
					return
				}
			}
		}
		if sleep(ctx, 500*time.Millisecond) != nil {
			return
		}
	}
}

// observe checks a view against the last one this job's poller saw
// (invariant 5): version and updated_at only move forward, together, and
// a finished job never leaves its state (a late refused finish may still
// add its cost, a new version).
func (c *clients) observe(r *jobRun, v view) {
	if v.ID == "" {
		return
	}
	r.mu.Lock()
	last := r.seen
	if v.Version >= last.Version {
		r.seen = v
	}
	if v.terminal() && r.ended.IsZero() {
		r.ended = time.Now()
	}
	r.mu.Unlock()
	c.mu.Lock()
	defer c.mu.Unlock()
	c.checks5++
	if last.Version == 0 {
		return
	}
	lt, _ := time.Parse(time.RFC3339Nano, last.UpdatedAt)
	vt, _ := time.Parse(time.RFC3339Nano, v.UpdatedAt)
	switch {
	case v.Version < last.Version:
		c.backwards = append(c.backwards, fmt.Sprintf("%s: version %d after %d", r.id, v.Version, last.Version))
	case v.Version == last.Version && (v.UpdatedAt != last.UpdatedAt || v.State != last.State):
		c.backwards = append(c.backwards, fmt.Sprintf("%s: version %d seen with updated_at %s/%s and state %s/%s", r.id, v.Version, last.UpdatedAt, v.UpdatedAt, last.State, v.State))
	case v.Version > last.Version && !vt.After(lt):
		c.backwards = append(c.backwards, fmt.Sprintf("%s: version %d -> %d but updated_at %s -> %s", r.id, last.Version, v.Version, last.UpdatedAt, v.UpdatedAt))
	case last.terminal() && v.State != last.State:
		c.backwards = append(c.backwards, fmt.Sprintf("%s: left its final state (%s v%d -> %s v%d)", r.id, last.State, last.Version, v.State, v.Version))
	}
}

func (c *clients) leak(s string) {
	c.mu.Lock()
	c.leaks = append(c.leaks, s)
	c.mu.Unlock()
}

// probe asks for, and tries to cancel, another tenant's job: both must be
// 404 (invariant 6).
func (c *clients) probe(ctx context.Context, tenant, otherID string) {
	for _, m := range []string{"GET", "POST"} {
		path := "/jobs/" + otherID
		if m == "POST" {
			path += "/cancel"
		}
		a, err := c.do(ctx, request{method: m, path: path, tenant: tenant})
		if err != nil || a.status >= 500 {
			continue // no answer: nothing seen
		}
		c.mu.Lock()
		c.checks6++
		c.mu.Unlock()
		if a.status != http.StatusNotFound {
			c.leak(fmt.Sprintf("tenant %s: %s %s answered %d: %.200s", tenant, m, path, a.status, a.body))
		}
	}
}

// list pages through a tenant's jobs: every job listed must be its own
// (invariant 6).
func (c *clients) list(ctx context.Context, tenant string) {
	cursor := ""
	for page := 0; page < 20; page++ {
		q := "/jobs?limit=100"
		if cursor != "" {
			q += "&cursor=" + url.QueryEscape(cursor)
		}
		a, err := c.do(ctx, request{method: "GET", path: q, tenant: tenant})
		if err != nil || a.status != http.StatusOK {
			return
		}
		var body struct {
			Jobs []struct {
				ID string `json:"id"`
			} `json:"jobs"`
			NextCursor *string `json:"next_cursor"`
		}
		if json.Unmarshal(a.body, &body) != nil {
			return
		}
		c.mu.Lock()
		for _, j := range body.Jobs {
			c.checks6++
			if !c.byTenant[tenant][j.ID] {
				c.leaks = append(c.leaks, fmt.Sprintf("tenant %s listed job %s, not its own", tenant, j.ID))
			}
		}
		c.mu.Unlock()
		if body.NextCursor == nil || *body.NextCursor == "" {
			return
		}
		cursor = *body.NextCursor
	}
}

// problemCode is the code of a problem answer ("" for another body).
func problemCode(body []byte) wire.Code {
	var p wire.Problem
	_ = json.Unmarshal(body, &p)
	return p.Code
}
