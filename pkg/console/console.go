package console

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"html/template"
	"log/slog"
	"net/http"
	"time"

	"github.com/aijobs/aijobs/pkg/job"
	"github.com/aijobs/aijobs/pkg/replay"
)

// Store is the part of the job store the console reads and writes: a
// job, a cancel, a tenant's list, the failure index and the overview's
// recent jobs.
type Store interface {
	Get(ctx context.Context, id string) (job.Job, error)
	Cancel(ctx context.Context, c job.Cancel) (job.Job, error)
	List(ctx context.Context, q job.ListQuery) (job.Page, error)
	Failures(ctx context.Context, q job.FailureQuery, each func(job.Failure) error) error
	Recent(ctx context.Context, q job.RecentQuery, each func(job.Job) error) error
}

// Depth is a queue's approximate number of visible messages (SQS's
// ApproximateNumberOfMessages).
type Depth interface {
	Backlog(ctx context.Context) (int, error)
}

// Replayer replays a selection of jobs through the claim path (pkg/replay).
type Replayer interface {
	Jobs(ctx context.Context, ids []string, o replay.Options) (replay.Summary, error)
}

// Config wires a Console.
type Config struct {
	Store Store
	// Queue and DeadLetters give the job queue's backlog and the dead
	// letter queue's depth; nil shows "unknown".
	Queue, DeadLetters Depth
	// Replayer replays; nil turns replay off (the page says why).
	Replayer Replayer
	// Quarantines lists and lifts quarantined inputs; nil (quarantine
	// off) shows the page saying so.
	Quarantines Quarantines
	// Who is the AWS identity every action is logged with (STS
	// GetCallerIdentity's ARN).
	Who string
	// Log receives the action log; nil discards it.
	Log *slog.Logger
	// Clock is the time; nil is the wall clock.
	Clock     job.Clock
	Retention job.Retention
	// Refresh is how often a live page polls; 0 means 5 s. The overview's
	// reads are cached for as long, however many pages poll.
	Refresh time.Duration
	// Window is how far back the overview reads jobs (the store's Recent
	// query); 0 means 48 h, which covers a day of failures whose jobs
	// were created up to a day before they ended.
	Window time.Duration
	// Token is the CSRF token state-changing forms carry; empty draws a
	// fresh one (per process).
	Token string
	// Access is the access token every request carries (docs/cli.md,
	// "console"); empty draws a fresh one (per process), which AccessURL
	// shows once.
	Access string
	// Secure marks the access cookie Secure: the browser reaches the
	// console over TLS (its own, or a reverse proxy's).
	Secure bool
	// AllowRemote lets requests addressed to a host other than loopback
	// in (behind a tunnel the operator set up); off by default.
	AllowRemote bool
	// ResultLinks signs the link a job's page shows for an answer kept
	// in the payload store; nil shows the answer's key, size and hash
	// only.
	ResultLinks ResultLinks
	// Spend reads the tenants' spend balances, and SpendLimits are each
	// tenant's limits (config.SpendLimits.For); either nil shows the
	// spend page saying no limit is configured.
	Spend       Spend
	SpendLimits func(tenant string) []job.PeriodLimit
	// SpendTenants are the tenants the limits name, shown beside those
	// with recent jobs.
	SpendTenants []string
	// Calls, when set, reports the AWS calls made so far by operation,
	// shown in the footer (the operator sees what a refresh costs).
	Calls func() map[string]int
}

// Console serves the pages.
type Console struct {
	cfg  Config
	log  *slog.Logger
	snap *snapshots
	mux  *http.ServeMux
	tmpl map[string]*template.Template
	// codes are the one-time codes of the URLs opened for a browser.
	codes *openCodes
}

// New returns a console over cfg.
func New(cfg Config) (*Console, error) {
	if cfg.Clock == nil {
		cfg.Clock = job.SystemClock{}
	}
	if cfg.Refresh <= 0 {
		cfg.Refresh = 5 * time.Second
	}
	if cfg.Window <= 0 {
		cfg.Window = 48 * time.Hour
	}
	for _, t := range []*string{&cfg.Token, &cfg.Access} {
		if *t == "" {
			b := make([]byte, 32)
			if _, err := rand.Read(b); err != nil {
				return nil, err
			}
			*t = hex.EncodeToString(b)
		}
	}
	log := cfg.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	tmpl, err := parseTemplates()
	if err != nil {
		return nil, err
	}
	c := &Console{cfg: cfg, log: log, snap: &snapshots{cfg: &cfg}, tmpl: tmpl, codes: &openCodes{live: map[string]time.Time{}}}
	c.routes()
	return c, nil
}

// ServeHTTP answers one request, after the host check and the access
// check (access.go).
func (c *Console) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !c.cfg.AllowRemote && !loopbackHost(r.Host) {
		c.refused(w, r, http.StatusForbidden, "host_refused", "the console answers requests addressed to 127.0.0.1 or localhost only")
		return
	}
	w.Header().Set("X-Frame-Options", "DENY")
	w.Header().Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; style-src 'self'; frame-ancestors 'none'")
	w.Header().Set("Referrer-Policy", "same-origin") // no-referrer would make the browser send "Origin: null" on our own forms
	if !c.admitted(w, r) {
		return
	}
	c.mux.ServeHTTP(w, r)
}

func (c *Console) routes() {
	m := http.NewServeMux()
	m.Handle("GET /static/", http.FileServerFS(assets))
	m.HandleFunc("GET /{$}", c.overview)
	m.HandleFunc("GET /failures", c.failures)
	m.HandleFunc("GET /failures/jobs", c.failureGroup)
	m.HandleFunc("GET /jobs", c.jobs)
	m.HandleFunc("GET /jobs/{id}", c.jobPage)
	m.HandleFunc("POST /jobs/{id}/cancel", c.guarded(c.cancel))
	m.HandleFunc("POST /replay/preview", c.guarded(c.replayPreview))
	m.HandleFunc("POST /replay", c.guarded(c.replayRun))
	m.HandleFunc("GET /quarantines", c.quarantines)
	m.HandleFunc("GET /spend", c.spend)
	m.HandleFunc("POST /quarantines/lift", c.guarded(c.liftQuarantine))
	m.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		problem(w, http.StatusNotFound, "not_found", "no such page")
	})
	c.mux = m
}
