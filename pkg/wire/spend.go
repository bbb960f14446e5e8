package wire

import "github.com/aijobs/aijobs/pkg/job"

// Spend answers GET /spend: the caller's own tenant's spend against its
// limits (docs/spend.md), one entry a period it has a limit in; none
// when it has no limit.
type Spend struct {
	Periods []SpendPeriod `json:"periods"`
}

// SpendPeriod is the tenant's balance in one period: its limit, what
// settled attempts spent, what attempts in flight hold (their worst
// cases, returned as they settle), what is left for new attempts, and
// when the period ends and its balance starts again.
type SpendPeriod struct {
	Period         string        `json:"period"`
	LimitCents     job.Nanocents `json:"limit_cents"`
	SpentCents     job.Nanocents `json:"spent_cents"`
	HeldCents      job.Nanocents `json:"held_cents"`
	RemainingCents job.Nanocents `json:"remaining_cents"`
	Ends           Time          `json:"ends"`
}
