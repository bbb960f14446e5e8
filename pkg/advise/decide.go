package advise

import (
	"errors"
	"fmt"
	"time"
)

// HeadroomPercent is the share of the shortest hop's timeout that an
// awaited call's p99 (with retries) may use and still be served
// synchronously. The rest is headroom for what the p99 does not show: the
// hop's own overhead, a cold start, a slower day at the provider.
const HeadroomPercent = 80

// Mode is how the work should be served.
type Mode string

const (
	// Sync: answer on the open request and stream the tokens.
	Sync Mode = "sync-stream"
	// Async: record a job, answer at once, let the caller poll or be
	// called back.
	Async Mode = "async"
)

// Rule names the rule of the package documentation that decided.
type Rule int

const (
	RuleOutlivesSession Rule = 1 // nobody awaits the answer
	RuleHopTooShort     Rule = 2 // awaited, but the p99 does not fit the hop
	RuleFits            Rule = 3 // awaited and it fits
)

// Input is what the decision needs.
type Input struct {
	// Hop is the shortest timeout on the request path.
	Hop Hop
	// P99 is the operation's p99 latency including retries and fallback
	// rungs (see Plan.P99WithRetries).
	P99 time.Duration
	// OutlivesSession is true when nobody awaits the answer (a batch, an
	// e-mail, a webhook); false when a user or caller waits for it.
	OutlivesSession bool
}

// Decision is the answer with the reasons for it, so it can be shown to
// whoever has to live with it.
type Decision struct {
	Mode Mode
	Rule Rule
	// Limit is the most the p99 may be to be served synchronously:
	// HeadroomPercent of the hop's timeout.
	Limit   time.Duration
	Reasons []string
}

// Limit is HeadroomPercent of the hop's timeout, computed in integers so
// the limit is exact: a p99 equal to it still fits.
func Limit(hop time.Duration) time.Duration {
	return hop/100*HeadroomPercent + hop%100*HeadroomPercent/100
}

// Decide applies the rule of the package documentation. A hop timeout or a
// p99 that is not positive is an error: a zero would decide silently.
func Decide(in Input) (Decision, error) {
	if in.Hop.Timeout <= 0 {
		return Decision{}, errors.New("advise: the hop timeout must be positive")
	}
	if in.P99 <= 0 {
		return Decision{}, errors.New("advise: the p99 latency must be positive")
	}
	limit := Limit(in.Hop.Timeout)
	hop := fmt.Sprintf("%s (%s)", in.Hop.Name, in.Hop.Timeout)
	fits := in.P99 <= limit
	switch {
	case in.OutlivesSession:
		d := Decision{Mode: Async, Rule: RuleOutlivesSession, Limit: limit, Reasons: []string{
			"the work outlives the user's session: nobody awaits the answer, so nothing should hold a connection open for it, whatever the latency",
			"a job record survives a closed tab: the result is kept and delivered by a poll or a callback",
		}}
		if !fits {
			d.Reasons = append(d.Reasons, fmt.Sprintf("besides, its p99 with retries (%s) would not fit under %d%% of %s (%s)", in.P99, HeadroomPercent, hop, limit))
		}
		return d, nil
	case !fits:
		return Decision{Mode: Async, Rule: RuleHopTooShort, Limit: limit, Reasons: []string{
			fmt.Sprintf("the p99 with retries (%s) is over %d%% of the shortest hop, %s: %s", in.P99, HeadroomPercent, hop, limit),
			"the slowest requests would be cut by that hop while the model call runs on: the cut call is still billed, and the client's retry pays for it a second time",
			"run it as a job and let the caller poll (ETag, Retry-After) or be called back",
		}}, nil
	default:
		return Decision{Mode: Sync, Rule: RuleFits, Limit: limit, Reasons: []string{
			fmt.Sprintf("the caller awaits the answer and the p99 with retries (%s) fits under %d%% of the shortest hop, %s: %s", in.P99, HeadroomPercent, hop, limit),
			"answer on the open request and stream the tokens: streaming keeps the connection busy and shows progress, and no job record is needed",
		}}, nil
	}
}
