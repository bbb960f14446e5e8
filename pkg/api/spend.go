package api

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/aijobs/aijobs/pkg/job"
	"github.com/aijobs/aijobs/pkg/wire"
)

// Spend is the tenants' spend balances the API reads (docs/spend.md):
// the workers hold and settle them; the API only looks.
type Spend interface {
	Balance(context.Context, job.SpendHold) (job.SpendBalance, error)
}

// balances are tenant's balances at now, one a period it has a limit in.
func (h *Handler) balances(ctx context.Context, tenant string, now time.Time) ([]job.PeriodLimit, []job.SpendBalance, error) {
	if h.spend == nil || h.spendLimits == nil {
		return nil, nil, nil
	}
	limits := h.spendLimits(tenant)
	out := make([]job.SpendBalance, len(limits))
	for i, l := range limits {
		b, err := h.spend.Balance(ctx, job.SpendHold{Tenant: tenant, Period: l.Period, At: now, Limit: l.Limit})
		if err != nil {
			return nil, nil, err
		}
		out[i] = b
	}
	return limits, out, nil
}

// spendView answers GET /spend: the caller's own tenant's balances.
func (h *Handler) spendView(ctx context.Context, log *slog.Logger, tenant string) events.APIGatewayV2HTTPResponse {
	now := h.clock.Now()
	limits, bs, err := h.balances(ctx, tenant, now)
	if err != nil {
		return h.serverProblem(ctx, log, "read spend", err)
	}
	v := wire.Spend{Periods: []wire.SpendPeriod{}}
	for i, l := range limits {
		_, end := l.Period.Bounds(now)
		v.Periods = append(v.Periods, wire.SpendPeriod{Period: string(l.Period), LimitCents: l.Limit, SpentCents: bs[i].Spent,
			HeldCents: bs[i].Held, RemainingCents: bs[i].Remaining(l.Limit), Ends: wire.Time{Time: end}})
	}
	body, err := json.Marshal(v)
	if err != nil {
		return h.serverProblem(ctx, log, "encode spend", fmt.Errorf("encode spend: %w", err))
	}
	return events.APIGatewayV2HTTPResponse{
		StatusCode: http.StatusOK,
		Headers:    map[string]string{"Content-Type": "application/json", "Cache-Control": "no-store"},
		Body:       string(body),
	}
}

// checkSpend refuses a create when its tenant has nothing left this
// period for the job's worst case: what settled attempts spent leaves
// less than j's reserve, so no hold could cover its first attempt until
// the period ends (holds in flight are not counted against it: they are
// returned as their attempts settle). It answers the wait to the end of
// the period that refused. A balance that does not answer lets the create
// through, logged: the workers' holds keep the limit whatever the API
// lets in.
func (h *Handler) checkSpend(ctx context.Context, log *slog.Logger, j job.Job) (time.Duration, error) {
	now := h.clock.Now()
	limits, bs, err := h.balances(ctx, j.Tenant, now)
	if err != nil {
		log.WarnContext(ctx, "create: the spend balance did not answer; the create goes on", slog.String("error", errorText(err)))
		return 0, nil
	}
	for i, l := range limits {
		if left := max(l.Limit-bs[i].Spent, 0); !job.Covers(left, j.Reserve) {
			_, end := l.Period.Bounds(now)
			return end.Sub(now), refuse(wire.CodeSpendLimit, "", "this tenant has spent %s of its %s cent limit for the %s: retry when the %s ends",
				bs[i].Spent, l.Limit, l.Period, l.Period)
		}
	}
	return 0, nil
}

// spendLimited adds the Retry-After of a create refused for its spend
// limit, the seconds to the period's end; any other answer (a repeat) is
// left as it is.
func spendLimited(resp events.APIGatewayV2HTTPResponse, wait time.Duration) events.APIGatewayV2HTTPResponse {
	if resp.StatusCode == http.StatusTooManyRequests {
		resp.Headers["Retry-After"] = seconds(wait)
	}
	return resp
}
