package client

import (
	"context"
	"fmt"
)

// Wait polls a job until it is terminal and answers its final view. It
// calls onChange (if not nil) with the first view and with every view
// whose version differs from the last one seen, so a caller can show
// progress; it is never called for an unchanged job.
//
// Between polls it waits the longer of its own backoff and the server's
// Retry-After (the time left to the route's median, 90th or 99th
// percentile latency, else growing with the job's age), capped at PollMax so a wrong header cannot stall
// it. The backoff starts at PollMin, doubles
// while the job does not change and starts again when it does. Each poll
// sends If-None-Match, so an unchanged job costs a 304 with no body.
//
// Failed and abandoned are terminal too: Wait answers them without error;
// look at View.State. It returns an error when ctx ends or a poll fails
// after its retries.
func (c *Client) Wait(ctx context.Context, id string, onChange func(View)) (View, error) {
	var (
		last    View
		etag    string
		seen    bool
		backoff = c.pollMin
	)
	for {
		s, err := c.Get(ctx, id, etag)
		if err != nil {
			return last, err
		}
		changed := !s.NotModified && (!seen || s.View.Version != last.Version)
		if !s.NotModified {
			last, etag, seen = s.View, s.ETag, true
		}
		if changed && onChange != nil {
			onChange(last)
		}
		if last.Terminal() {
			return last, nil
		}
		if changed {
			backoff = c.pollMin
		} else {
			backoff = min(backoff*2, c.pollMax)
		}
		wait := min(max(backoff, s.RetryAfter), c.pollMax)
		if err := c.sleep(ctx, wait); err != nil {
			return last, fmt.Errorf("aijobs API: wait for %s: %w", id, err)
		}
	}
}
