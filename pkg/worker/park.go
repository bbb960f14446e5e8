package worker

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/aijobs/aijobs/pkg/finish"
	"github.com/aijobs/aijobs/pkg/job"
	"github.com/aijobs/aijobs/pkg/parking"
)

// parked is an outcome being parked beside the writes that record it
// (docs/parking.md, "Parked outcomes"). It is parked from the first
// write the store fails, not once the writes give up: by then the lease
// may already be running out (heartbeats fail as the writes do), and a
// worker that found the attempt dead before the outcome was in the lot
// would write it off and generate again. Parking costs S3 requests on the
// failure path only; a write that lands at once parks nothing.
type parked struct {
	lot  parking.Lot
	key  string
	stop context.CancelFunc
	done chan error
}

// start puts o in the lot in the background, hedged after `after` (see
// hedge) until it lands, or ctx (the finish context) ends, or close stops
// it.
func (p *parked) start(ctx context.Context, o finish.Outcome, after time.Duration, rnd func() float64) {
	pctx, stop := context.WithCancel(ctx)
	p.stop, p.done = stop, make(chan error, 1)
	go func() {
		p.done <- hedge(pctx, rnd, after, func(ctx context.Context) error { return parking.Park(ctx, p.lot, o) })
	}()
}

// parkHedge is how long a put of a parked outcome may go unanswered before
// another is sent beside it: 2 s, the S3 performance guidelines' advice
// for small objects ("Timeouts and Retries for Latency-Sensitive
// Applications": retry a GET or PUT of an object under 512 KB after 2 s),
// scaled with the heartbeat (a fifth of it) in test and chaos timings.
func (t Timing) parkHedge() time.Duration { return min(2*time.Second, t.Heartbeat/5) }

// maxHedged bounds the puts of one outcome in flight at once.
const maxHedged = 3

// hedge runs put until one try succeeds, one fails with an error other
// than unavailable, or ctx ends. A try unanswered after `after` gets
// another beside it (at most maxHedged at once): the put is idempotent
// (one key, one body), and the outcome it carries is worth more than the
// requests, so a stalled request does not spend the window alone. After a
// failure with nothing else in flight, the next try waits as retryWrite's
// do.
func hedge(ctx context.Context, rnd func() float64, after time.Duration, put func(context.Context) error) error {
	hctx, cancel := context.WithCancel(ctx)
	defer cancel()
	results := make(chan error, maxHedged) // never more senders alive than this
	inFlight, fails := 0, 0
	var last error
	launch := func() {
		inFlight++
		go func() { results <- put(hctx) }()
	}
	launch()
	hedgeAt := time.NewTicker(after)
	defer hedgeAt.Stop()
	var retry <-chan time.Time
	for {
		select {
		case err := <-results:
			inFlight--
			if err == nil || job.ErrorCode(err) != job.CodeUnavailable {
				return err
			}
			last = err
			if inFlight == 0 {
				retry = time.After(retryWait(fails, rnd))
			}
			fails++
		case <-hedgeAt.C:
			if inFlight > 0 && inFlight < maxHedged {
				launch()
			}
		case <-retry:
			retry = nil
			if inFlight == 0 {
				launch()
			}
		case <-ctx.Done():
			if last == nil {
				last = &job.Error{Code: job.CodeUnavailable, Message: "parking did not finish in time", Err: ctx.Err()}
			}
			return last
		}
	}
}

// errParked is a finish that never landed but whose outcome is in the lot:
// the job is settled from there once this attempt's lease has run out.
var errParked = errors.New("the outcome could not be recorded and is parked")

// close ends the parking once the writes ended with err. A write that
// landed, or was refused (the store settled the cost either way), leaves
// nothing to park: the copy is deleted (the bucket's lifecycle rule
// removes one whose delete fails). A write that never landed answers
// errParked when the outcome is in the lot, and err when it could not be
// parked either: then the answer is lost, and its hold is what the record
// will charge for it (a write-off).
func (p *parked) close(ctx context.Context, err error, log *slog.Logger) error {
	if job.ErrorCode(err) != job.CodeUnavailable {
		p.stop()
		<-p.done
		if derr := p.lot.Delete(ctx, p.key); derr != nil {
			log.Warn("deleting a parked outcome the store has recorded failed; the lot's lifecycle rule removes it", "err", derr)
		}
		return err
	}
	if perr := <-p.done; perr != nil {
		log.Error("recording the outcome failed and parking it failed: the paid answer is lost", "err", err, "park_err", perr)
		return err
	}
	log.Warn("recording the outcome failed; it is parked for the next worker to settle", "err", err, "key", p.key)
	return errParked
}

// retryWait is the wait after the i-th failed try (from 0) of a finishing
// write (retryWrite) or of a put of its parked copy (hedge): a random part
// of a ceiling that doubles from writeRetryBase to writeRetryMax.
func retryWait(i int, rnd func() float64) time.Duration {
	ceiling := min(writeRetryBase<<min(i, 16), writeRetryMax)
	return time.Duration(float64(ceiling) * (0.1 + 0.9*rnd()))
}

const (
	writeRetryBase = 100 * time.Millisecond
	writeRetryMax  = 2 * time.Second
)
