package wire

import "github.com/aijobs/aijobs/pkg/job"

// Quote answers POST /quotes: what a job with this body would cost and
// whether the caller's spend limits and the job's budget would let it
// run now (docs/spend.md, "A quote before the spend"). Nothing is
// recorded. Worst cases are exact for today's prices; expected costs
// are estimates.
type Quote struct {
	Model string `json:"model"`
	// WorstCaseCents is what the job's first attempt holds on its budget
	// and on its tenant's balance before its first call (the claim's
	// reserve); MaxWorstCaseCents the most any one call on the route may
	// cost, the dearest rung and lane the job allows.
	WorstCaseCents    job.Nanocents `json:"worst_case_cents"`
	MaxWorstCaseCents job.Nanocents `json:"max_worst_case_cents"`
	// ExpectedCents estimates an attempt its first call answers.
	ExpectedCents job.Nanocents `json:"expected_cents"`
	BudgetCents   job.Nanocents `json:"budget_cents"`
	// BudgetCoversMax says whether the budget covers MaxWorstCaseCents:
	// when it does not, a fallback to the dearest rung may be skipped.
	BudgetCoversMax bool `json:"budget_covers_max"`
	// Covered says whether every period's remaining balance covers
	// WorstCaseCents: a job created now would not wait for its spend
	// limit (unless other attempts take the balance first).
	Covered bool         `json:"covered"`
	Offers  []QuoteOffer `json:"offers"`
	Spend   []QuoteSpend `json:"spend"`
}

// QuoteOffer is one rung of the route in one lane the job allows.
type QuoteOffer struct {
	Rung           int           `json:"rung"`
	Provider       string        `json:"provider"`
	ProviderModel  string        `json:"provider_model"`
	Lane           string        `json:"lane"`
	WorstCaseCents job.Nanocents `json:"worst_case_cents"`
	ExpectedCents  job.Nanocents `json:"expected_cents"`
}

// QuoteSpend is the caller's balance in one period it has a limit in (as
// GET /spend shows it) and whether what remains covers the worst case.
type QuoteSpend struct {
	SpendPeriod
	Covers bool `json:"covers"`
}
