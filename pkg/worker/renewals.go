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
// first entry, whichever comes first. Each attempt keeps its own ticker:
// aligning the ticks to the invocation would move some attempts' renewals
// earlier than their own, and cost a call whose length is a multiple of
// the interval one more.
//
// Nothing waits for a round. An attempt asks for its extension and goes
// straight on to its lease write; it reads the entry's result at a later
// heartbeat, and asks again only once the last round answered, so a
// stalled or slow request holds neither a lease write (the lease is what
// keeps one generation per job; the message's visibility only saves a
// wasted receive) nor its neighbours, and never piles up. The request is
// cancelled once no attempt it carries is still running, as a single call
// was when its attempt ended: a renewal must not land after the outcome
// set the message's visibility.
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
	holders int // entries not yet dropped
	cancel  context.CancelFunc
	done    chan struct{}
	failed  map[string]error
}

// entry is one attempt's extension in a round.
type entry struct {
	s       *renewals
	r       *round
	handle  string
	dropped bool
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

// ask hides the message of receiptHandle for d in the current round,
// without waiting for it: the entry answers when the round has.
func (s *renewals) ask(receiptHandle string, d time.Duration) *entry {
	s.mu.Lock()
	defer s.mu.Unlock()
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
	r.holders++
	if len(r.changes) >= s.members {
		s.sendLocked(r)
	}
	return &entry{s: s, r: r, handle: receiptHandle}
}

// answered reports whether the entry's round has answered, and if so the
// entry's own error.
func (e *entry) answered() (bool, error) {
	select {
	case <-e.r.done:
		return true, e.r.failed[e.handle]
	default:
		return false, nil
	}
}

// drop withdraws an entry whose attempt no longer wants it: from the round
// if it is not sent yet, else from those the request still serves (the
// last one out cancels it).
func (e *entry) drop() {
	s, r := e.s, e.r
	s.mu.Lock()
	defer s.mu.Unlock()
	if e.dropped {
		return
	}
	e.dropped = true
	r.holders--
	switch {
	case !r.sent:
		delete(r.changes, e.handle)
		if len(r.changes) == 0 {
			// Nobody else joined: the round is dropped, never sent.
			r.timer.Stop()
			s.open = nil
		}
	case r.holders == 0:
		r.cancel()
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
