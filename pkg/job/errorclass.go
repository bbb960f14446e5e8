package job

// ErrorClass is the normalised reason an attempt or a job ended badly. It is
// what operators group by after an incident, so it is never a vendor string;
// a short vendor detail may travel separately (Job.ErrorDetail).
type ErrorClass string

// The classes of docs/errors.md ("Job error classes"). Their retry rule and
// final state live in one table (classes) so the worker, the reconciler and the
// docs agree.
const (
	RateLimited ErrorClass = "rate_limited"
	Overloaded  ErrorClass = "overloaded"
	// CapacityUnavailable is a lane's refusal for want of capacity (a
	// flex call the provider cannot serve now): the attempt moves on to
	// the rung's next lane, and when none is left the job is handed back
	// uncounted while its deadline allows (docs/lanes.md, "Cost
	// lanes").
	CapacityUnavailable ErrorClass = "capacity_unavailable"
	Timeout             ErrorClass = "timeout"
	ProviderError       ErrorClass = "provider_error"
	Network             ErrorClass = "network"
	// InvalidOutput is an answer that is not JSON its job's
	// response_format schema accepts: paid for, and retried, as a new
	// generation may conform (docs/providers.md, "Structured output").
	InvalidOutput         ErrorClass = "invalid_output"
	ContextLengthExceeded ErrorClass = "context_length_exceeded"
	ContentFiltered       ErrorClass = "content_filtered"
	InvalidRequest        ErrorClass = "invalid_request"
	Auth                  ErrorClass = "auth"
	QuotaExhausted        ErrorClass = "quota_exhausted"
	DeadlineExceeded      ErrorClass = "deadline_exceeded"
	BudgetExhausted       ErrorClass = "budget_exhausted"
	// SpendLimit ends a job whose tenant's spend limit (docs/spend.md)
	// kept it deferred until its deadline: the money was the tenant's
	// to cap, not the job's budget's.
	SpendLimit   ErrorClass = "spend_limit"
	Cancelled    ErrorClass = "cancelled"
	DeadLettered ErrorClass = "dead_lettered"
	Internal     ErrorClass = "internal"
)

type classRule struct {
	retryable bool
	final     State
}

var classes = map[ErrorClass]classRule{
	RateLimited:           {true, Failed},
	Overloaded:            {true, Failed},
	CapacityUnavailable:   {true, Failed},
	Timeout:               {true, Failed},
	ProviderError:         {true, Failed},
	Network:               {true, Failed},
	InvalidOutput:         {true, Failed},
	ContextLengthExceeded: {false, Failed},
	ContentFiltered:       {false, Failed},
	InvalidRequest:        {false, Failed},
	Auth:                  {false, Failed},
	QuotaExhausted:        {false, Failed},
	DeadlineExceeded:      {false, Abandoned},
	BudgetExhausted:       {false, Abandoned},
	SpendLimit:            {false, Abandoned},
	Cancelled:             {false, Abandoned},
	DeadLettered:          {false, Failed},
	Internal:              {true, Failed},
}

// Classes lists every class, in the order of the design table.
func Classes() []ErrorClass {
	return []ErrorClass{RateLimited, Overloaded, CapacityUnavailable, Timeout, ProviderError, Network,
		InvalidOutput, ContextLengthExceeded, ContentFiltered, InvalidRequest, Auth, QuotaExhausted,
		DeadlineExceeded, BudgetExhausted, SpendLimit, Cancelled, DeadLettered, Internal}
}

// Valid reports whether c is a known class.
func (c ErrorClass) Valid() bool { _, ok := classes[c]; return ok }

// Retryable reports whether another attempt may fix it. Unknown classes are
// treated as Internal (retryable), never trusted blindly.
func (c ErrorClass) Retryable() bool { return c.rule().retryable }

// Deterministic reports whether the same input on the same route would
// fail the same way again: the provider refused the input itself (too
// long, filtered, malformed), not the moment. Such an input is
// quarantined (Quarantine).
func (c ErrorClass) Deterministic() bool {
	return c == ContextLengthExceeded || c == ContentFiltered || c == InvalidRequest
}

// FinalState is the state a job ends in when this class stops it.
func (c ErrorClass) FinalState() State { return c.rule().final }

func (c ErrorClass) rule() classRule {
	if r, ok := classes[c]; ok {
		return r
	}
	return classes[Internal]
}
