package worker

import (
	"context"
	"strconv"
	"time"
)

// maxDelay is SQS's longest message delay (DelaySeconds, 900 s). A longer
// wait is re-sent at it: the job's record still says when the wait ends
// (its not_before, or a lease), so the early message is refused by the
// claim (job.WhyRefused: Wait) and waits again for what is left.
const maxDelay = 15 * time.Minute

// manyReceives is the receive count from which SQS leaves a message out of
// the queue's ApproximateAgeOfOldestMessage (SQS developer guide,
// "Available CloudWatch metrics for Amazon SQS"): the worker measures
// those messages' age itself (noteReceives).
const manyReceives = 3

// wait keeps m's job waiting for d: a deferral, a retry's backoff, a
// duplicate facing a live lease. A wait up to Timing.RequeueAfter hides
// the message (one call, and the message stays counted in flight); a
// longer one sends a fresh message delayed by d (at most maxDelay), in
// tenant's group as every job message is (a fair queue's group), and lets
// this one be deleted, so waiting jobs do not fill SQS's in-flight quota
// (about 120,000 on a standard queue), which would stall every tenant's
// receives. The send comes first and the delete only after it landed: a
// send that fails hides the message as before, so a job is never left
// without one. It answers what becomes of m; why names the wait in the
// log.
func (c *crew) wait(ctx context.Context, m message, tenant string, d time.Duration, why string) outcome {
	if c.timing.RequeueAfter <= 0 || d <= c.timing.RequeueAfter || m.jobID == "" {
		c.hide(ctx, m, d, why)
		return outcomeKeep
	}
	if tenant == "" {
		// The group SQS delivered the message in, where it says (AWS,
		// moto; kumo does not).
		tenant = m.Attributes["MessageGroupId"]
	}
	delay := min(d, maxDelay)
	if err := c.queue.SendAfter(ctx, m.jobID, tenant, delay); err != nil {
		m.log.Warn("re-sending a long wait as a delayed message failed; the message waits hidden instead", "why", why, "err", err)
		c.hide(ctx, m, d, why)
		return outcomeKeep
	}
	m.log.Info("a long wait was re-sent as a delayed message", "why", why, "wait_ms", d.Milliseconds(), "delay_ms", delay.Milliseconds())
	c.meter.count("MessagesRequeued", nil)
	return outcomeDelete
}

// hide keeps m's message hidden for d, where it stays counted in flight.
func (c *crew) hide(ctx context.Context, m message, d time.Duration, why string) {
	if err := c.queue.ChangeVisibility(ctx, m.ReceiptHandle, d); err != nil {
		m.log.Warn("hiding a waiting job's message failed; it returns at its current visibility", "why", why, "err", err)
	}
}

// noteReceives reports, for a message received manyReceives times or
// more, how long ago it was sent (ReceivedManyTimesAge, seconds): SQS's
// own age metric leaves such messages out, so a job whose message keeps
// coming back (a store that refuses, a crash on it) would age unseen.
func (c *crew) noteReceives(m message) {
	if m.receives() < manyReceives {
		return
	}
	ms, err := strconv.ParseInt(m.Attributes["SentTimestamp"], 10, 64)
	if err != nil {
		return
	}
	age := c.clock.Now().Sub(time.UnixMilli(ms))
	c.meter.Emit("ReceivedManyTimesAge", max(age, 0).Seconds(), "Seconds", nil)
}
