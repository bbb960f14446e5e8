package job

// A quote (POST /quotes, docs/spend.md, "A quote before the spend") says
// what a job would cost before it is created: the worst cases the holds
// would take, exact, and an expected cost, an estimate.

// OfferQuote is one way a job's attempt may call a rung of its route:
// the rung's index, the rung as served in one lane, its worst case (what
// a hold before the call takes) and its expected cost (ExpectedCost).
type OfferQuote struct {
	Rung      int
	Offer     Rung
	WorstCase Nanocents
	Expected  Nanocents
}

// ExpectedCost estimates what a call on this rung costs, for a quote and
// never for a hold: the prompt at half its ceiling (PromptCeiling counts
// a token per two bytes where providers count about four) and half the
// output cap (an answer's length is not known before it is generated),
// at the rung's prices. It is a rule of thumb, not a bound: an answer that
// uses its whole cap costs up to the worst case.
func (g Rung) ExpectedCost(in Input) Nanocents {
	return g.Price.Cost((in.Ceiling()+1)/2, (g.outputTokens(in)+1)/2)
}

// Quote is every offer of every rung of r a job allowing lanes (nil: any)
// may be called in, rung by rung, each lane in the rung's order.
func (r Route) Quote(in Input, lanes []Lane) []OfferQuote {
	var out []OfferQuote
	for i, g := range r.Rungs {
		for _, o := range g.Offers() {
			if allows(lanes, o.Lane) {
				out = append(out, OfferQuote{Rung: i, Offer: o, WorstCase: o.WorstCase(in), Expected: o.ExpectedCost(in)})
			}
		}
	}
	return out
}

// Expected is the expected cost of a job's attempt that its first call
// answers: the entry rung's cheapest allowed lane (the one Reserve
// prices), at ExpectedCost. Zero when no rung offers an allowed lane.
func (r Route) Expected(in Input, lanes []Lane) Nanocents {
	g, ok := r.Entry(lanes)
	if !ok {
		return 0
	}
	var best Rung
	found := false
	for _, o := range g.Offers() {
		if allows(lanes, o.Lane) && (!found || o.WorstCase(in) < best.WorstCase(in)) {
			best, found = o, true
		}
	}
	return best.ExpectedCost(in)
}
