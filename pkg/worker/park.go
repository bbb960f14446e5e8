package worker

import (
	"context"
	"errors"
	"log/slog"

	"github.com/aijobs/aijobs/pkg/job"
	"github.com/aijobs/aijobs/pkg/parking"
)

// parked is an outcome being parked beside the writes that record it
// (docs/architecture.md, "Parked outcomes"). It is parked from the first
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

// park puts o in the lot in the background, retried like the writes until
// it lands, or ctx (the finish context) ends, or settle stops it.
func (a *attempt) park(ctx context.Context, o parking.Outcome) *parked {
	pctx, stop := context.WithCancel(ctx)
	p := &parked{lot: a.w.cfg.Parking, key: parking.Key(a.j.ID, a.owner), stop: stop, done: make(chan error, 1)}
	go func() {
		p.done <- retryWrite(pctx, a.w.cfg.Rand, func() error { return parking.Park(pctx, p.lot, o) })
	}()
	return p
}

// errParked is a finish that never landed but whose outcome is in the lot:
// the job is settled from there once this attempt's lease has run out.
var errParked = errors.New("the outcome could not be recorded and is parked")

// settle ends the parking once the writes ended with err. A write that
// landed, or was refused (the store settled the cost either way), leaves
// nothing to park: the copy is deleted (the bucket's lifecycle rule
// removes one whose delete fails). A write that never landed answers
// errParked when the outcome is in the lot, and err when it could not be
// parked either: then the answer is lost, and its hold is what the record
// will charge for it (a write-off).
func (p *parked) settle(ctx context.Context, err error, log *slog.Logger) error {
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
