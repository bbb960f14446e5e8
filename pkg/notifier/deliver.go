package notifier

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/aijobs/aijobs/pkg/job"
	"github.com/aijobs/aijobs/pkg/webhook"
	"github.com/aijobs/aijobs/pkg/wire"
)

// Dead-letter reasons of the callback queue (docs/errors.md).
const (
	reasonInvalid = "invalid_notice"
	reasonGaveUp  = "callback_gave_up"
)

// Deliver sends each notice of a batch, concurrently, and answers the ones
// to try again (ReportBatchItemFailures), each hidden for its backoff.
func (n *Notifier) Deliver(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
	var (
		mu   sync.Mutex
		resp events.SQSEventResponse
		wg   sync.WaitGroup
	)
	for _, m := range ev.Records {
		wg.Go(func() {
			if !n.deliverOne(ctx, m) {
				mu.Lock()
				resp.BatchItemFailures = append(resp.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: m.MessageId})
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return resp, nil
}

// deliverOne handles one notice and says whether its message is done.
func (n *Notifier) deliverOne(ctx context.Context, m events.SQSMessage) bool {
	notice, ok := parseNotice(m.Body)
	if !ok {
		return n.giveUp(ctx, m, reasonInvalid, n.cfg.Logger)
	}
	log := n.cfg.Logger.With("job_id", notice.JobID, "version", notice.Version)
	j, err := n.cfg.Store.Get(ctx, notice.JobID)
	switch job.ErrorCode(err) {
	case "":
	case job.CodeNotFound:
		log.Info("callback dropped: the job is gone")
		return true
	default:
		log.Warn("reading the job failed; the notice returns later", "err", err)
		return false
	}
	switch {
	case j.Deliveries.DeliveredVersion >= notice.Version:
		// A notice of the same or a later write already reached the
		// receiver: this one is a duplicate, or superseded.
		return true
	case !j.Callback.Wants(j.State):
		// The job moved on to a state nobody asked for (a retry back to
		// queued, a replay): the next wanted state sends its own notice.
		log.Info("callback dropped: superseded", "state", j.State)
		n.count("CallbacksSuperseded")
		return true
	}
	keys, err := n.signingKeys(ctx, j.Tenant)
	if err != nil {
		log.Warn("reading the tenant's signing key versions failed; the notice returns later", "err", err)
		return false
	}
	status, retryAfter, err := n.post(ctx, j, notice, keys)
	delivered := status >= 200 && status < 300
	n.record(ctx, job.Delivery{ID: j.ID, Now: n.cfg.Clock.Now(), Version: notice.Version, Status: status, Delivered: delivered}, log)
	switch {
	case delivered:
		n.count("CallbacksDelivered")
		n.cfg.Metrics.Emit("CallbackLatency", float64(n.cfg.Clock.Now().Sub(j.UpdatedAt).Milliseconds()), "Milliseconds", nil)
		return true
	case status == http.StatusGone:
		log.Info("callback refused for good by the receiver (410)")
		n.count("CallbacksGone")
		return true
	}
	attempt := receiveCount(m)
	log.Info("callback delivery failed", "status", status, "attempt", attempt, "err", errText(err))
	n.count("CallbackFailures")
	if attempt >= n.cfg.Retry.Attempts || webhook.IsRefusedTarget(err) {
		return n.giveUp(ctx, m, reasonGaveUp, log)
	}
	wait := job.Backoff(attempt, n.cfg.Retry.Base, n.cfg.Retry.Max, n.cfg.Rand())
	wait = min(max(wait, retryAfter), n.cfg.Retry.Max)
	if err := n.cfg.Queue.ChangeVisibility(ctx, m.ReceiptHandle, wait); err != nil {
		log.Warn("setting the callback backoff failed; the notice returns at its current visibility", "err", err)
	}
	return false
}

// signingKeys are the keys a delivery for tenant is signed with now: its
// own, derived from the deployment's secrets, so that a receiver of one
// tenant never verifies a delivery made for another tenant's job.
func (n *Notifier) signingKeys(ctx context.Context, tenant string) ([]webhook.Secret, error) {
	keys := job.FirstWebhookKeys(tenant)
	if n.cfg.Keys != nil {
		var err error
		if keys, err = n.cfg.Keys.WebhookKeys(ctx, tenant); err != nil {
			return nil, err
		}
	}
	return webhook.TenantSecrets(n.cfg.Secrets, tenant, keys.InUse(n.cfg.Clock.Now())), nil
}

// post sends the job's current view, signed with keys, and answers the receiver's
// status (0 when it never answered) and its Retry-After. The body of the
// answer is read (a little, so the connection can be reused) and dropped.
func (n *Notifier) post(ctx context.Context, j job.Job, notice Notice, keys []webhook.Secret) (int, time.Duration, error) {
	ev, err := n.event(ctx, j)
	if err != nil {
		return 0, 0, err
	}
	body, err := json.Marshal(ev)
	if err != nil {
		return 0, 0, err
	}
	h, err := webhook.Sign(keys, wire.WebhookID(j.ID, notice.Version), n.cfg.Clock.Now(), body)
	if err != nil {
		return 0, 0, err
	}
	ctx, cancel := context.WithTimeout(ctx, n.cfg.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, j.Callback.URL, bytes.NewReader(body))
	if err != nil {
		return 0, 0, err
	}
	req.Header = h
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "aijobs-webhooks/1")
	resp, err := n.cfg.HTTP.Do(req)
	if err != nil {
		return 0, 0, err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4<<10))
	return resp.StatusCode, retryAfter(resp.Header.Get("Retry-After")), nil
}

// record writes the attempt on the job, a few times if the store is
// unavailable: a lost record leaves the view's callback status behind, the
// delivery itself stands.
func (n *Notifier) record(ctx context.Context, d job.Delivery, log *slog.Logger) {
	var err error
	for try := 1; ; try++ {
		if _, err = n.cfg.Store.RecordDelivery(ctx, d); err == nil || job.ErrorCode(err) == job.CodeNotFound {
			return
		}
		if try == 3 {
			break
		}
		select {
		case <-ctx.Done():
			log.Warn("recording a callback delivery failed", "err", err)
			return
		case <-time.After(time.Duration(try) * 100 * time.Millisecond):
		}
	}
	log.Warn("recording a callback delivery failed", "err", err)
}

// giveUp sends the notice to the dead letter queue with reason and says
// whether the message may be deleted (only once the dead letter is sent).
func (n *Notifier) giveUp(ctx context.Context, m events.SQSMessage, reason string, log *slog.Logger) bool {
	if err := n.cfg.Queue.DeadLetter(ctx, m.Body, reason); err != nil {
		log.Error("dead-lettering a callback notice failed; it returns later", "reason", reason, "err", err)
		return false
	}
	log.Warn("callback notice dead-lettered", "reason", reason)
	n.count("CallbacksDeadLettered")
	return true
}

func receiveCount(m events.SQSMessage) int {
	c, err := strconv.Atoi(m.Attributes["ApproximateReceiveCount"])
	if err != nil || c < 1 {
		return 1
	}
	return c
}

// retryAfter reads a Retry-After in seconds (an HTTP date is ignored).
func retryAfter(v string) time.Duration {
	s, err := strconv.Atoi(v)
	if err != nil || s < 0 {
		return 0
	}
	return time.Duration(s) * time.Second
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	var ue interface{ Timeout() bool }
	if errors.As(err, &ue) && ue.Timeout() {
		return "timeout"
	}
	if webhook.IsRefusedTarget(err) {
		return "refused target address"
	}
	return "no answer"
}
