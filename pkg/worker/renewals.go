package worker

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// renewals gathers the visibility extensions that one invocation's
// attempts make in the same heartbeat into one Queue.ChangeVisibilities
// call (one ChangeMessageVisibilityBatch per ten messages) instead of one
// ChangeMessageVisibility per message: a batch of five running calls
// costs one SQS request per heartbeat, not five.
//
// An invocation's attempts are claimed together, so their heartbeats tick
// a few milliseconds apart: a round is sent as soon as every attempt whose
// heartbeat runs has joined it, or gather (a quarter interval) after its
// first entry, whichever comes first, so an attempt stuck in a stalled
// lease write, or claimed later, never holds its neighbours' renewals back
// for long. Each attempt keeps its own ticker: aligning the ticks to the
// invocation would move some attempts' renewals earlier than their own,
// and cost a call whose length is a multiple of the interval one more. Each attempt waits
// only for its own entry's result and stops waiting when its own
// heartbeat ends; the request is cancelled when no attempt waits for it
// any more, as a single call was when its attempt ended. The renewals
// never decide anything about a lease: each attempt's lease guard does,
// on its own timer, so a round that stalls or fails is, for each attempt
// it carries, a stalled or failed visibility call, and nothing more.
type renewals struct {
	ctx    context.Context
	queue  Queue
	gather time.Duration

	mu      sync.Mutex
	members int
	open    *round
}

// round is one request's worth of extensions: the entries by receipt
// handle, and once sent, each failed entry's error.
type round struct {
	changes map[string]time.Duration
	timer   *time.Timer
	sent    bool
	waiting int
	cancel  context.CancelFunc
	done    chan struct{}
	failed  map[string]error
}

func newRenewals(ctx context.Context, q Queue, heartbeat time.Duration) *renewals {
	return &renewals{ctx: ctx, queue: q, gather: max(heartbeat/4, time.Millisecond)}
}

// join counts a running heartbeat among those a round waits for; leave
// ends that, and sends an open round that now has everyone it waits for.
func (s *renewals) join() {
	s.mu.Lock()
	s.members++
	s.mu.Unlock()
}

func (s *renewals) leave() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.members--
	if r := s.open; r != nil && len(r.changes) >= s.members {
		s.sendLocked(r)
	}
}

// extend hides the message of receiptHandle for d in the current round
// and waits for that entry's result, or for ctx (the attempt's heartbeat)
// to end.
func (s *renewals) extend(ctx context.Context, receiptHandle string, d time.Duration) error {
	s.mu.Lock()
	r := s.open
	if r == nil {
		r = &round{changes: map[string]time.Duration{}, done: make(chan struct{})}
		s.open = r
		r.timer = time.AfterFunc(s.gather, func() {
			s.mu.Lock()
			defer s.mu.Unlock()
			s.sendLocked(r)
		})
	}
	r.changes[receiptHandle] = d
	r.waiting++
	if len(r.changes) >= s.members {
		s.sendLocked(r)
	}
	s.mu.Unlock()

	select {
	case <-r.done:
		return r.failed[receiptHandle]
	case <-ctx.Done():
		s.mu.Lock()
		defer s.mu.Unlock()
		if r.waiting--; !r.sent {
			delete(r.changes, receiptHandle)
			if len(r.changes) == 0 {
				// Nobody else joined: the round is dropped, never sent.
				r.timer.Stop()
				s.open = nil
			}
		} else if r.waiting == 0 {
			r.cancel()
		}
		return ctx.Err()
	}
}

// sendLocked sends r once, on a goroutine of its own (s.mu held).
func (s *renewals) sendLocked(r *round) {
	if r.sent || len(r.changes) == 0 {
		return
	}
	r.sent = true
	r.timer.Stop()
	if s.open == r {
		s.open = nil
	}
	ctx, cancel := context.WithCancel(s.ctx)
	r.cancel = cancel
	go func() {
		defer cancel()
		defer close(r.done)
		defer func() {
			// A panic in the queue's driver fails the round's entries
			// instead of killing the process and the whole batch.
			if v := recover(); v != nil {
				err := fmt.Errorf("worker: renewing message visibility panicked: %v", v)
				r.failed = map[string]error{}
				for h := range r.changes {
					r.failed[h] = err
				}
			}
		}()
		r.failed = s.queue.ChangeVisibilities(ctx, r.changes)
	}()
}
