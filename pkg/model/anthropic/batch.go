package anthropic

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/aijobs/aijobs/pkg/job"
	"github.com/aijobs/aijobs/pkg/model"
)

// The batch lane's wire (docs/lanes.md, "The batch lane"): one
// Message Batch of the jobs' Messages requests, each under its job's id
// as custom_id, polled until its processing ends, and its results read
// line by line.
//
// Anthropic deduplicates no batch create and keeps no metadata on a
// batch, so a create whose answer was lost is looked for among the
// newest batches: one made since the create was sent, of as many
// requests. A collector killed between the create and recording its
// answer sends the same jobs again with ResubmitBatch, which looks the
// same way, from when the jobs were sealed (docs/decisions.md, "The batch
// lane's design").

// lostWindow is how far before a lost create's send a batch it made may
// say it was created: the two clocks are not the same.
const lostWindow = 30 * time.Second

// batchObject is the part of a Message Batch the lane reads.
type batchObject struct {
	ID               string    `json:"id"`
	ProcessingStatus string    `json:"processing_status"`
	CreatedAt        time.Time `json:"created_at"`
	RequestCounts    struct {
		Processing int `json:"processing"`
		Succeeded  int `json:"succeeded"`
		Errored    int `json:"errored"`
		Canceled   int `json:"canceled"`
		Expired    int `json:"expired"`
	} `json:"request_counts"`
}

func (b batchObject) requests() int {
	c := b.RequestCounts
	return c.Processing + c.Succeeded + c.Errored + c.Canceled + c.Expired
}

type batchRequest struct {
	CustomID string          `json:"custom_id"`
	Params   messagesRequest `json:"params"`
}

// resultLine is one line of a batch's results.
type resultLine struct {
	CustomID string `json:"custom_id"`
	Result   struct {
		Type    string           `json:"type"`
		Message messagesResponse `json:"message"`
		Error   struct {
			Error errorBody `json:"error"`
		} `json:"error"`
	} `json:"result"`
}

// SubmitBatch makes one Message Batch of reqs (model.Batcher). key, the
// collector's id for it, is not sent: the API has nowhere to keep it.
func (c *Client) SubmitBatch(ctx context.Context, key string, reqs []model.Request) (string, error) {
	in := struct {
		Requests []batchRequest `json:"requests"`
	}{}
	for _, r := range reqs {
		if r.Model == "" {
			r.Model = c.cfg.Model
		}
		if r.MaxTokens == 0 {
			r.MaxTokens = DefaultMaxTokens
		}
		if err := unsendable(r.Options); err != nil {
			return "", err
		}
		p := c.request(r)
		p.Stream = false
		in.Requests = append(in.Requests, batchRequest{CustomID: r.JobID, Params: p})
	}
	body, err := json.Marshal(in)
	if err != nil {
		return "", fmt.Errorf("anthropic: encode batch: %w", err)
	}
	start := time.Now()
	sctx, sent := model.TraceSent(ctx)
	var b batchObject
	err = c.batchCall(sctx, http.MethodPost, c.batches(""), bytes.NewReader(body), &b)
	if err != nil && sent.Done() && ctx.Err() == nil && !refused(err) {
		if found, lerr := c.madeSince(ctx, start, len(reqs)); lerr == nil && len(found) == 1 {
			return found[0].ID, nil
		}
	}
	if err != nil {
		return "", err
	}
	return b.ID, nil
}

// ErrAmbiguous is a resubmit that found several batches an earlier send
// may have made, not all of them ended: none is taken for it and nothing
// is sent, until their results tell which is ours.
var ErrAmbiguous = errors.New("anthropic: several batches of as many requests were made since the jobs were sealed; none is guessed")

// ResubmitBatch sends reqs again, sealed at sealed and perhaps sent
// since by a collector that died before it recorded the answer. Among
// the batches of as many requests made since then, other than the taken
// ones (the collector's other batches): an ended one is ours when its
// results name our jobs; one still processing is taken for ours when it
// is the only one, and with several none is guessed (ErrAmbiguous) until
// they end. With none, a batch is made (SubmitBatch). A lone batch another
// client of the key made at the same time with as many requests would be
// taken for ours: its results then name none of our jobs, which are
// handed back (a delay, never a second bill).
func (c *Client) ResubmitBatch(ctx context.Context, key string, sealed time.Time, taken []string, reqs []model.Request) (string, error) {
	found, err := c.madeSince(ctx, sealed, len(reqs))
	if err != nil {
		return "", err // unknown: nothing is sent
	}
	found = slices.DeleteFunc(found, func(b batchObject) bool { return slices.Contains(taken, b.ID) })
	var mine, open []string
	for _, b := range found {
		if b.ProcessingStatus != "ended" {
			open = append(open, b.ID)
			continue
		}
		ours, err := c.names(ctx, b.ID, reqs)
		if err != nil {
			return "", err
		}
		if ours {
			mine = append(mine, b.ID)
		}
	}
	switch {
	case len(mine) == 1:
		return mine[0], nil
	case len(mine) == 0 && len(open) == 1:
		return open[0], nil
	case len(mine) > 0 || len(open) > 0:
		return "", ErrAmbiguous
	}
	return c.SubmitBatch(ctx, key, reqs)
}

// names reports whether ended batch id's results name one of reqs' jobs:
// a batch's custom ids are its own, so its first result says.
func (c *Client) names(ctx context.Context, id string, reqs []model.Request) (bool, error) {
	ours, seen := false, errors.New("seen")
	err := c.BatchResults(ctx, id, func(custom string, _ model.Response, _ error) error {
		ours = slices.ContainsFunc(reqs, func(r model.Request) bool { return r.JobID == custom })
		return seen
	})
	if err != nil && !errors.Is(err, seen) {
		return false, err
	}
	return ours, nil
}

// listPages bounds madeSince's listing: a thousand batches of the key
// since a seal is more than the lane makes in a day.
const listPages = 10

// madeSince is every batch of n requests made since at (less lostWindow:
// the two clocks are not the same), listed newest first, a hundred a
// page, until one older than that. More than listPages pages of them is
// an error: what was made is unknown.
func (c *Client) madeSince(ctx context.Context, at time.Time, n int) ([]batchObject, error) {
	from := at.Add(-lostWindow)
	var found []batchObject
	after := ""
	for range listPages {
		var page struct {
			Data    []batchObject `json:"data"`
			HasMore bool          `json:"has_more"`
			LastID  string        `json:"last_id"`
		}
		q := url.Values{"limit": {"100"}}
		if after != "" {
			q.Set("after_id", after)
		}
		if err := c.batchCall(ctx, http.MethodGet, c.batches("?"+q.Encode()), nil, &page); err != nil {
			return nil, err
		}
		for _, b := range page.Data {
			if b.CreatedAt.Before(from) {
				return found, nil
			}
			if b.requests() == n {
				found = append(found, b)
			}
		}
		if !page.HasMore || page.LastID == "" {
			return found, nil
		}
		after = page.LastID
	}
	return nil, fmt.Errorf("anthropic: over %d batches made since %s: cannot tell which are ours", listPages*100, from.Format(time.RFC3339))
}

// BatchEnded reports whether batch id's processing ended.
func (c *Client) BatchEnded(ctx context.Context, id string) (bool, error) {
	var b batchObject
	err := c.batchCall(ctx, http.MethodGet, c.batches("/"+url.PathEscape(id)), nil, &b)
	return b.ProcessingStatus == "ended", err
}

// BatchResults reads the ended batch id's results.
func (c *Client) BatchResults(ctx context.Context, id string, each func(string, model.Response, error) error) error {
	if ended, err := c.BatchEnded(ctx, id); err != nil || !ended {
		return errors.Join(fmt.Errorf("anthropic: batch %s has not ended", id), err)
	}
	resp, err := c.send(ctx, http.MethodGet, c.batches("/"+url.PathEscape(id)+"/results"), nil)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	return model.EachResult(resp.Body, "anthropic: read batch "+id+" results", func(l resultLine) error {
		if l.CustomID == "" {
			return nil
		}
		out, err := l.result()
		return each(l.CustomID, out, err)
	})
}

// result is l's answer, or its error: an errored item is classified as a
// call's error body is, and billed nothing (a batch bills only answers);
// an expired or canceled one is a capacity refusal (not run in time).
func (l resultLine) result() (model.Response, error) {
	switch l.Result.Type {
	case "succeeded":
		m := l.Result.Message
		out := answer(m.Content)
		u := model.BatchUnreported(out)
		if m.Usage != nil {
			u = m.Usage.model() // a batch's answer caches as a call's does
		}
		return finish(out, m.Model, m.StopReason, "", u)
	case "errored":
		return model.Response{}, bodyError("batch item", 0, "", l.Result.Error.Error)
	case "expired", "canceled":
		return model.Response{}, &model.Error{Class: job.CapacityUnavailable, Detail: "anthropic: batch item " + l.Result.Type}
	}
	return model.Response{}, &model.Error{Class: job.ProviderError, Detail: "anthropic: batch item of no known result type"}
}

func (c *Client) batches(suffix string) string {
	return strings.TrimRight(c.cfg.BaseURL, "/") + "/v1/messages/batches" + suffix
}

// batchCall sends one request of the batch wire and decodes its JSON
// answer into out.
func (c *Client) batchCall(ctx context.Context, method, u string, body io.Reader, out any) error {
	resp, err := c.send(ctx, method, u, body)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		return &model.Error{Class: job.ProviderError, Detail: "anthropic: unparseable batch answer", Err: fmt.Errorf("anthropic: decode: %w", err)}
	}
	return nil
}

// send sends one request of the batch wire with the key and version; an
// answer that is not a 2xx is its classified error. Nothing on this wire
// is billed: only the batch's answers are.
func (c *Client) send(ctx context.Context, method, u string, body io.Reader) (*http.Response, error) {
	hr, err := c.api().Request(ctx, method, u, body)
	if err != nil {
		return nil, err
	}
	resp, err := c.cfg.HTTPClient.Do(hr)
	if err != nil {
		return nil, transportError(ctx, err, "", model.Usage{})
	}
	if resp.StatusCode/100 != 2 {
		b := model.ErrorBody(resp.Body)
		_ = resp.Body.Close()
		return nil, &answered{status: resp.StatusCode, err: statusError(resp.StatusCode, requestID(resp.Header), b)}
	}
	return resp, nil
}

// answered is a batch wire's answer that was not a 2xx: its status says
// whether the request may have landed (a 5xx may have; a 4xx did not).
type answered struct {
	status int
	err    *model.Error
}

func (a *answered) Error() string { return a.err.Error() }
func (a *answered) Unwrap() error { return a.err }

// refused reports whether err is a 4xx answer: the API did not act on
// the request, so no batch was made that a lookup could find.
func refused(err error) bool {
	var a *answered
	return errors.As(err, &a) && a.status/100 == 4
}
