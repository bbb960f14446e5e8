package api

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"runtime/debug"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/aijobs/aijobs/pkg/job"
	"github.com/aijobs/aijobs/pkg/wire"
)

// Store is what the handler needs from the job store. Create answers an
// *job.Error of code Conflict carrying the existing record when the id is
// taken; Get and Cancel answer code NotFound for an unknown id; Cancel
// answers Conflict carrying the record when the job is already terminal.
type Store interface {
	Create(ctx context.Context, j job.Job) (job.Job, error)
	Get(ctx context.Context, id string) (job.Job, error)
	// Peek reads what a poll shows of a job, possibly a second stale: it
	// may miss the latest write, or a job created a moment ago.
	Peek(ctx context.Context, id string) (job.Job, error)
	Cancel(ctx context.Context, c job.Cancel) (job.Job, error)
	// List answers a page of one tenant's jobs, newest first; a bad
	// cursor is an invalid_request naming the cursor field.
	List(ctx context.Context, q job.ListQuery) (job.Page, error)
}

// Queue delivers a job id to the workers. Duplicates are harmless: the
// worker's claim dedupes them.
type Queue interface {
	Send(ctx context.Context, jobID, tenant string) error
}

// Config is what New needs. Store, Queue, Limits and Retention are required;
// Clock defaults to the wall clock, EnqueueRetryAfter to one second and
// Logger to JSON on standard error.
type Config struct {
	Store     Store
	Queue     Queue
	Limits    job.Limits
	Retention job.Retention
	// Routes are the model routes by name: a new job's Reserve is its
	// route's worst case for its input, so the claim can refuse an attempt
	// the budget cannot cover. A route missing here reserves nothing.
	Routes map[string]job.Route
	Clock  job.Clock
	// EnqueueRetryAfter is the Retry-After of a 503: how soon a client
	// should retry a create that was recorded but not enqueued.
	EnqueueRetryAfter time.Duration
	// Callbacks checks a create's callback_url; nil means the deployment
	// delivers no callbacks, and a create that asks for one is refused.
	Callbacks CallbackChecker
	// Signing serves each tenant its webhook signing key (GET
	// /webhook-key, POST /webhook-key/rotate); nil answers them 404, as a
	// deployment with no callbacks does.
	Signing *Signing
	// Quarantines refuses a create whose input is quarantined for its
	// tenant and route (job.Quarantine); nil checks nothing.
	Quarantines Quarantines
	// Queued holds each tenant's queued jobs, QueuedLimit says how many a
	// tenant may have (AIJOBS_TENANT_QUEUED; 0: no limit): a create over
	// it is refused 429 too_many_queued. Either nil limits nothing.
	Queued      Slots
	QueuedLimit func(tenant string) int
	// ResultLinks signs the link a view carries for an answer kept in the
	// payload store; nil answers a view of one 503 unavailable.
	ResultLinks ResultLinks
	// Spend and SpendLimits are the tenants' spend balances and limits
	// (AIJOBS_TENANT_SPEND; docs/spend.md): GET /spend shows the caller
	// its own, and a create its tenant has nothing left for this period
	// is refused 429 spend_limit. Either nil limits nothing.
	Spend       Spend
	SpendLimits func(tenant string) []job.PeriodLimit
	// Payloads keeps inputs too large for a record and serves uploads
	// (docs/payloads.md); nil keeps every input inline and answers POST
	// /uploads 404.
	Payloads Payloads
	Logger   *slog.Logger
}

// Slots are the tenants' queued slots every API instance shares
// (docs/fairness.md, "Tenant fairness").
type Slots interface {
	Enter(context.Context, job.Slot) (bool, error)
	Leave(context.Context, job.Slot) error
}

// Quarantines answers whether an input is quarantined at now.
type Quarantines interface {
	Quarantined(ctx context.Context, k job.QuarantineKey, now time.Time) (job.Quarantine, bool, error)
}

// CallbackChecker refuses a callback target the deployment may not call
// (webhook.Policy with a resolver is one). Its refusal is a
// *webhook.ErrTarget, whose reason is shown to the caller.
type CallbackChecker interface {
	Check(ctx context.Context, url string) error
}

// Handler answers API Gateway HTTP API events. It is safe for concurrent use.
type Handler struct {
	store      Store
	queue      Queue
	limits     job.Limits
	retention  job.Retention
	routes     map[string]job.Route
	clock      job.Clock
	retryAfter time.Duration
	callbacks  CallbackChecker
	signing    *Signing
	quarantine Quarantines
	queued     Slots
	queuedMax  func(tenant string) int
	spend      Spend
	// spendLimits is each tenant's spend limits (docs/spend.md).
	spendLimits func(tenant string) []job.PeriodLimit
	latency     *routeLatency
	links       ResultLinks
	payloads    Payloads
	log         *slog.Logger
}

// New builds a Handler from cfg, filling the optional fields' defaults.
func New(cfg Config) *Handler {
	h := &Handler{
		store:       cfg.Store,
		queue:       cfg.Queue,
		limits:      cfg.Limits,
		retention:   cfg.Retention,
		routes:      cfg.Routes,
		clock:       cfg.Clock,
		retryAfter:  cfg.EnqueueRetryAfter,
		callbacks:   cfg.Callbacks,
		signing:     cfg.Signing,
		quarantine:  cfg.Quarantines,
		queued:      cfg.Queued,
		queuedMax:   cfg.QueuedLimit,
		spend:       cfg.Spend,
		spendLimits: cfg.SpendLimits,
		latency:     newRouteLatency(cfg.Routes),
		links:       cfg.ResultLinks,
		payloads:    cfg.Payloads,
		log:         cfg.Logger,
	}
	if h.clock == nil {
		h.clock = job.SystemClock{}
	}
	if h.retryAfter < time.Second {
		h.retryAfter = time.Second
	}
	if h.log == nil {
		h.log = slog.New(slog.NewJSONHandler(os.Stderr, nil))
	}
	return h
}

// Handle answers one request. It never returns a non-nil error and never
// panics: a failure of any kind is a problem+json response (a panic is a
// 500 internal), and its cause goes to the log.
func (h *Handler) Handle(ctx context.Context, ev events.APIGatewayV2HTTPRequest) (resp events.APIGatewayV2HTTPResponse, err error) {
	log := h.log.With(
		slog.String("request_id", ev.RequestContext.RequestID),
		slog.String("method", ev.RequestContext.HTTP.Method),
		slog.String("path", Clip(ev.RawPath, 200)),
	)
	defer func() {
		if v := recover(); v != nil {
			log.LogAttrs(ctx, slog.LevelError, "panic while handling a request",
				slog.String("panic", Clip(fmt.Sprint(v), 500)),
				slog.String("stack", string(debug.Stack())))
			resp, err = problemFor(wire.CodeInternal, "", ""), nil
		}
		log.LogAttrs(ctx, slog.LevelInfo, "request", slog.Int("status", resp.StatusCode))
	}()
	return h.route(ctx, log, ev), nil
}
