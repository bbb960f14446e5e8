// Package worker is the worker Lambda's handler: it takes an SQS batch,
// claims each job before any model call (so a duplicate delivery costs one
// database round trip, not a second billed generation), keeps the claim
// alive with heartbeats on both the message and the record, and records
// every outcome, cost included, before the function's deadline.
//
// The files follow a message and its attempt: a message is received
// (receive.go), its job claimed (claim.go) and, near the receive limit,
// handed off (handoff.go); a wait longer than a bound is re-sent as a
// delayed message (requeue.go); the worker's crew and Config are in
// worker.go.
// An attempt runs (attempt.go) once admission lets its call go (admit.go:
// its tenant's slot, its bucket's take, its queued place, a deferral, the
// lease renewed after a wait; share.go: the worker's own share of a limit
// whose table does not answer), climbing the route's rungs and lanes,
// enlisted in a batch lane or resuming a paid generation (climb.go), each
// rung a model call (call.go) that tells its provider's bucket how it
// went (bucket.go); on a detached rung the generation runs on with no
// worker waiting, and a delayed message reattaches the job to look at it
// (detach.go). What happened is decided first, as a verdict
// (verdict.go), and its one finish (finish.go) records it, with what it
// cost, as a success, a retry or an end (pkg/finish builds the writes and
// follows the end), or a deferral, parked (park.go) when the store will
// not take it. Its lease is kept by the heartbeat (heartbeat.go), the
// lease guard (guard.go) and the invocation's batched renewals
// (renewals.go).
package worker

import (
	"context"
	"log/slog"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/aijobs/aijobs/pkg/finish"
	"github.com/aijobs/aijobs/pkg/job"
	"github.com/aijobs/aijobs/pkg/model"
	"github.com/aijobs/aijobs/pkg/parking"
)

// Store is the part of the job store the worker drives.
type Store interface {
	Get(context.Context, string) (job.Job, error)
	Claim(context.Context, job.Claim) (job.Job, error)
	Heartbeat(context.Context, job.Heartbeat) (job.Job, error)
	HoldMore(context.Context, job.HoldMore) (job.Job, error)
	finish.Finisher // the finishing writes, recorded as every finisher records them
	Defer(context.Context, job.Defer) (job.Job, error)
	WriteOff(context.Context, job.WriteOff) (job.Job, error)
	Await(context.Context, job.Await) (job.Job, error)
	Resume(context.Context, job.Resume) (job.Job, error)
	Detach(context.Context, job.Detach) (job.Job, error)
	Reattach(context.Context, job.Reattach) (job.Job, error)
	Enlist(context.Context, job.Enlist) (job.Job, error)
}

// Queue is the part of the job queue the worker drives.
type Queue interface {
	ChangeVisibility(ctx context.Context, receiptHandle string, d time.Duration) error
	// ChangeVisibilities hides several messages at once, each for its own
	// duration (by receipt handle), and returns the error of each change
	// that failed: the heartbeat's extensions for a whole invocation.
	ChangeVisibilities(ctx context.Context, changes map[string]time.Duration) map[string]error
	DeadLetter(ctx context.Context, body, reason string) error
	SendAfter(ctx context.Context, jobID, tenant string, delay time.Duration) error
}

// Metrics receives the worker's counters (CloudWatch EMF in Lambda).
type Metrics interface {
	Emit(metric string, value float64, unit string, dims map[string]string)
}

type noMetrics struct{}

func (noMetrics) Emit(string, float64, string, map[string]string) {}

// meter is what the worker counts, in the words of its metrics.
type meter struct{ Metrics }

func (m meter) count(metric string, dims map[string]string) {
	m.Emit(metric, 1, "Count", dims)
}

// spent reports money an attempt cost, in cents (metrics need no exactness;
// the record keeps the exact amount).
func (m meter) spent(c job.Nanocents) {
	if c > 0 {
		m.Emit("CostCents", float64(c)/float64(job.NanosPerCent), "None", nil)
	}
}

// Timing are the rules of docs/architecture.md ("Timing rules and why") the
// worker applies.
type Timing struct {
	// Heartbeat is how often a running attempt renews its lease and message.
	Heartbeat time.Duration
	// LeaseTTL is how far ahead each renewal reaches, so a dead worker's job
	// comes back within LeaseTTL, not at the queue's visibility timeout.
	LeaseTTL time.Duration
	// AttemptMargin is added to the route's timeout (every rung's) to give
	// the attempt's deadline; the lease never reaches past it.
	AttemptMargin time.Duration
	// LeaseMargin stops a call whose lease could not be renewed this long
	// before the lease ends, on a timer of its own whatever the heartbeat
	// is doing: past the lease's end another worker may claim the job. It
	// must exceed the clock skew between workers plus the time a call
	// takes to stop. Zero means one heartbeat interval.
	LeaseMargin time.Duration
	// LambdaMargin ends the model call this long before the function's
	// deadline, so the outcome is always recorded.
	LambdaMargin time.Duration
	BackoffBase  time.Duration
	BackoffMax   time.Duration
	// RequeueAfter is the longest wait a message waits out hidden (in
	// flight); a longer one is re-sent as a delayed message (crew.wait).
	// Zero hides every wait.
	RequeueAfter time.Duration
	// CollectEvery is the batch lane's collector period: a job enters the
	// lane only if its lease there outlasts the lane's window and one
	// period, since the collector hands back, a period ahead, a job whose
	// lease would end before its batch (attempt.enlist).
	CollectEvery time.Duration
}

func (t Timing) leaseMargin() time.Duration {
	if t.LeaseMargin > 0 {
		return t.LeaseMargin
	}
	return t.Heartbeat
}

// Config wires a Worker.
type Config struct {
	Store Store
	Queue Queue
	// Routes are the model routes by name (the job's model field); each
	// rung names a provider of Providers.
	Routes    map[string]job.Route
	Providers map[string]model.Provider
	// Buckets are the providers' shared rate-limit buckets, taken from
	// before a call on a rung whose provider declares limits; nil takes
	// nothing (every call goes, as before limits).
	Buckets Buckets
	// Slots and InFlight keep each tenant to its limit of jobs in flight
	// (InFlight's answer; 0 is none): a job over it is deferred, not run.
	// Either nil: no limit.
	Slots    Slots
	InFlight func(tenant string) int
	// Queued and QueuedLimit are the tenants' queued slots the API enters
	// at create (AIJOBS_TENANT_QUEUED): a job's first attempt gives its
	// place back when its call may start. Either nil: no limit.
	Queued      Slots
	QueuedLimit func(tenant string) int
	// Spend and SpendLimits keep each tenant within its spend limits
	// (AIJOBS_TENANT_SPEND; docs/spend.md): an attempt holds its worst
	// case on the tenant's balance of each period it has a limit in, and
	// one the balance cannot cover is deferred. Either nil: no limit.
	Spend       Spend
	SpendLimits func(tenant string) []job.PeriodLimit
	// SpendDigest names SpendLimits (config.SpendLimits.Digest): a claim
	// records it, and a dead attempt's recovery trusts the record's
	// promise to hold first only when it names the limits it holds
	// itself (docs/spend.md, "Crash windows").
	SpendDigest string
	// SpendAlarmShare is the share of a tenant's limit (0.8: 80%) whose
	// passing a settle logs and counts in SpendShareReached
	// (AIJOBS_SPEND_ALARM_SHARE, the SpendShareReached alarm); 0: never.
	SpendAlarmShare float64
	// Workers is how many workers share Buckets' and Slots' limits at
	// most (AIJOBS_MAX_CONCURRENCY: the concurrent invocations, one
	// process each in Lambda). While a shared store does not answer, this
	// worker holds itself to its share of the limit, the limit over
	// Workers (docs/ratelimits.md, "Provider rate limits"); below 1 is 1.
	Workers int
	// Parking is where an outcome the store keeps refusing is parked, and
	// where a dead attempt's outcome is looked for before it is written
	// off (pkg/parking); nil parks nothing.
	Parking parking.Lot
	// Answers is where an answer too large for the record is put
	// (docs/payloads.md, "Answers"); nil keeps every answer inline, and
	// one the record cannot hold fails its attempt, its cost kept.
	Answers Answers
	// Quarantine is where a job that ended with a deterministic class
	// puts its input (job.Quarantine), for QuarantineFor; nil, or a zero
	// QuarantineFor, quarantines nothing.
	Quarantine    finish.Quarantiner
	QuarantineFor time.Duration
	// Inputs reads the inputs records keep in the payload store
	// (job.Job.InputRef); nil ends such a job, class internal.
	Inputs Inputs
	Timing Timing
	// ReceiveLimit is the queue's maxReceiveCount (0: none). A message the
	// worker would return to the queue on its ReceiveLimit-1th receive is
	// handed off instead (see handOff), so SQS's own redrive only catches
	// messages no worker ever saw.
	ReceiveLimit int
	Retention    job.Retention
	Clock        job.Clock
	Logger       *slog.Logger
	Metrics      Metrics
	// Rand returns a number in [0,1) for backoff jitter.
	Rand func() float64
	// NewOwner returns a fresh lease token for each claim.
	NewOwner func() string
}

// Worker handles SQS batches of job messages.
type Worker struct {
	cfg Config
	*crew
}

// crew is what a worker and each of its attempts work with, made once from
// the Config: the store, queue and lot they write, the providers and
// routes they call, the rules they follow (timing, retention, limits,
// what follows an end) and the meter they count in.
type crew struct {
	store     Store
	queue     Queue
	lot       parking.Lot // nil parks nothing
	answers   Answers     // nil keeps every answer inline
	afterEnd  finish.AfterEnd
	providers map[string]model.Provider
	routes    map[string]job.Route
	clock     job.Clock
	timing    Timing
	retention job.Retention
	rand      func() float64
	meter     meter
	inputs    Inputs // nil reads no stored input
	limits
}

// limits are who may call now, which each attempt's admission keeps: a
// tenant keeps to its limit of jobs in flight (slots, inFlight), gives
// back its queued place when its first call starts (queued, queuedMax),
// and a provider key to its rate limit (buckets). A nil collaborator is
// no limit; a collaborator that does not answer is the worker's share of
// its limit.
type limits struct {
	buckets   Buckets
	slots     Slots
	inFlight  func(tenant string) int
	queued    Slots
	queuedMax func(tenant string) int
	// spend and spendLimits keep each tenant within its spend limits
	// (docs/spend.md); either nil: none.
	spend       Spend
	spendLimits func(tenant string) []job.PeriodLimit
	spendAlarm  float64
	// spendFirst is what a claim promises (SpendDigest) and a recovery
	// checks; nil without limits.
	spendFirst *parking.SpendFirst
	// share is this worker's share of the buckets' and slots' limits,
	// which holds while their stores do not answer.
	share *share
}

// granted is what admission granted one attempt: its slot in flight, once
// entered, and its last allowed take, which its give returns at.
type granted struct {
	slot  job.Slot
	taken taken
	// slotHere says the slot is held in the worker's share only: the
	// slots did not answer, so nothing of it is in the shared store.
	slotHere bool
	// holds are the attempt's holds on its tenant's spend balances,
	// settled after its outcome is recorded.
	holds []spendGrant
}

// New returns a worker; nil Rand, NewOwner and Logger get defaults.
func New(cfg Config) *Worker {
	if cfg.Rand == nil {
		cfg.Rand = rand.Float64
	}
	if cfg.NewOwner == nil {
		cfg.NewOwner = randomOwner
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Metrics == nil {
		cfg.Metrics = noMetrics{}
	}
	if cfg.Clock == nil {
		cfg.Clock = job.SystemClock{}
	}
	var first *parking.SpendFirst
	if cfg.Spend != nil && cfg.SpendLimits != nil && cfg.SpendDigest != "" {
		m := meter{cfg.Metrics}
		first = &parking.SpendFirst{Balances: cfg.Spend, Limits: cfg.SpendLimits, Digest: cfg.SpendDigest,
			Settled: func(st job.SpendSettle, seen job.SpendSettled) {
				spendPassed(cfg.Logger, m, st, seen, cfg.SpendAlarmShare)
			}}
	}
	return &Worker{cfg: cfg, crew: &crew{store: cfg.Store, queue: cfg.Queue, lot: cfg.Parking, answers: cfg.Answers,
		afterEnd:  finish.AfterEnd{Quarantine: cfg.Quarantine, QuarantineFor: cfg.QuarantineFor, Metrics: cfg.Metrics},
		providers: cfg.Providers, routes: cfg.Routes, clock: cfg.Clock, timing: cfg.Timing, retention: cfg.Retention,
		rand: cfg.Rand, meter: meter{cfg.Metrics}, inputs: cfg.Inputs,
		limits: limits{buckets: cfg.Buckets, slots: cfg.Slots, inFlight: cfg.InFlight, queued: cfg.Queued, queuedMax: cfg.QueuedLimit,
			spend: cfg.Spend, spendLimits: cfg.SpendLimits, spendAlarm: cfg.SpendAlarmShare, spendFirst: first, share: newShare(cfg.Workers)}}}
}

// Handle processes every message of the batch concurrently, each with its
// own claim, heartbeat and outcome, and reports the messages that must come
// back as batch item failures (Lambda deletes the rest).
func (w *Worker) Handle(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
	keep := make([]bool, len(ev.Records))
	renew := newRenewals(ctx, w.queue, w.timing.Heartbeat)
	var wg sync.WaitGroup
	for i, m := range ev.Records {
		wg.Add(1)
		go func() {
			defer wg.Done()
			keep[i] = w.receive(ctx, m, renew) != outcomeDelete
		}()
	}
	wg.Wait()
	var resp events.SQSEventResponse
	for i, k := range keep {
		if k {
			resp.BatchItemFailures = append(resp.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: ev.Records[i].MessageId})
		}
	}
	return resp, nil
}

func randomOwner() string {
	const letters = "abcdefghijklmnopqrstuvwxyz0123456789"
	b := make([]byte, 20)
	for i := range b {
		b[i] = letters[rand.IntN(len(letters))]
	}
	return "w_" + string(b)
}
