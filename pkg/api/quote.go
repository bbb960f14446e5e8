package api

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"

	"github.com/aws/aws-lambda-go/events"

	"github.com/aijobs/aijobs/pkg/job"
	"github.com/aijobs/aijobs/pkg/wire"
)

// quoteKey stands in for the Idempotency-Key a quote does not need: the
// create's parse wants one, and a quote records nothing it could name.
const quoteKey = "quote"

// quote answers POST /quotes (docs/spend.md, "A quote before the spend"):
// the body of a create, checked by the create's own checks (the same 4xx
// for the same body, a repeat aside: a quote has no key), answered with
// the job's worst cases, its expected cost and whether the tenant's
// spend balances would cover its first attempt now. It records nothing,
// takes no queued place, holds nothing: it only reads the balances.
func (h *Handler) quote(ctx context.Context, log *slog.Logger, ev events.APIGatewayV2HTTPRequest, tenant string) events.APIGatewayV2HTTPResponse {
	j, in, bad := h.quotedJob(ctx, log, ev, tenant)
	if bad != nil {
		return h.clientProblem(ctx, log, "quote", bad)
	}
	now := h.clock.Now()
	limits, bs, err := h.balances(ctx, tenant, now)
	if err != nil {
		return h.serverProblem(ctx, log, "read spend", err)
	}
	q := quoteOf(j, h.routes[j.Model], in)
	for i, l := range limits {
		_, end := l.Period.Bounds(now)
		left := bs[i].Remaining(l.Limit)
		s := wire.QuoteSpend{SpendPeriod: wire.SpendPeriod{Period: string(l.Period), LimitCents: l.Limit, SpentCents: bs[i].Spent,
			HeldCents: bs[i].Held, RemainingCents: left, Ends: wire.Time{Time: end}}, Covers: job.Covers(left, j.Reserve)}
		q.Covered = q.Covered && s.Covers
		q.Spend = append(q.Spend, s)
	}
	body, err := json.Marshal(q)
	if err != nil {
		return h.serverProblem(ctx, log, "encode quote", fmt.Errorf("encode quote: %w", err))
	}
	return events.APIGatewayV2HTTPResponse{
		StatusCode: http.StatusOK,
		Headers:    map[string]string{"Content-Type": "application/json", "Cache-Control": "no-store"},
		Body:       string(body),
	}
}

// quotedJob is the job a create of ev's body would record, through the
// create's checks in the create's order (body, media type, upload,
// parse, callback, quarantine, route), with its Reserve set; or the
// first check's refusal.
func (h *Handler) quotedJob(ctx context.Context, log *slog.Logger, ev events.APIGatewayV2HTTPRequest, tenant string) (job.Job, job.Input, error) {
	b, bad := body(ev)
	if bad != nil {
		return job.Job{}, job.Input{}, bad
	}
	if bad := checkContentType(ev); bad != nil {
		return job.Job{}, job.Input{}, bad
	}
	b, uploaded, err := h.withUpload(ctx, tenant, b)
	if err != nil {
		return job.Job{}, job.Input{}, err
	}
	limit := MaxBodyBytes
	if uploaded {
		limit += MaxUploadBytes
	}
	req, err := parseCreate(tenant, quoteKey, b, h.limits, limit)
	if err != nil {
		return job.Job{}, job.Input{}, err
	}
	j := req.NewJob(h.clock.Now(), h.retention.Failed)
	if req.Callback.URL != "" {
		if bad := h.checkCallback(ctx, req.Callback.URL); bad != nil {
			return job.Job{}, job.Input{}, bad
		}
	}
	if bad := h.checkQuarantine(ctx, log, j); bad != nil {
		return job.Job{}, job.Input{}, bad
	}
	if bad := h.checkRoute(&j, req.Input); bad != nil {
		return job.Job{}, job.Input{}, bad
	}
	return j, req.Input, nil
}

// quoteOf is j's quote on route r for input in, its spend not yet read
// (Covered stays true until a period does not cover).
func quoteOf(j job.Job, r job.Route, in job.Input) wire.Quote {
	q := wire.Quote{Model: j.Model, WorstCaseCents: j.Reserve, ExpectedCents: r.Expected(in, j.Lanes), BudgetCents: j.Budget,
		Covered: true, Offers: []wire.QuoteOffer{}, Spend: []wire.QuoteSpend{}}
	for _, o := range r.Quote(in, j.Lanes) {
		q.MaxWorstCaseCents = max(q.MaxWorstCaseCents, o.WorstCase)
		q.Offers = append(q.Offers, wire.QuoteOffer{Rung: o.Rung, Provider: o.Offer.Provider, ProviderModel: o.Offer.Model,
			Lane: string(o.Offer.Lane), WorstCaseCents: o.WorstCase, ExpectedCents: o.Expected})
	}
	q.BudgetCoversMax = job.Covers(j.Budget, q.MaxWorstCaseCents)
	return q
}
