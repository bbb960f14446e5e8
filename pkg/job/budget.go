package job

// The budget rules, in one place. A job's budget bounds what all its
// attempts may spend, and two rules keep it:
//
//   - An attempt, or a fallback rung within one, starts only if the budget
//     left covers its worst case (Covers): at create (the budget against
//     the route's first rung), at the claim (what remains against the
//     record's reserve), after an error (what will remain once this
//     attempt settles, against the next attempt's worst case), at an
//     operator's replay, and before each fallback rung (what the attempt
//     has left against that rung's worst case).
//   - A running attempt holds its worst case (the claim takes Reserve,
//     HoldMore raises it before a fallback rung), so attempts in flight
//     never spend the same money twice, and a worker that dies leaves its
//     hold: the provider may have billed the call.
//
// The store states the claim's and the replay's halves of these rules as
// write conditions (remaining_nc >= reserve_nc); the conformance suite
// holds the two equal.

// Covers reports whether left pays for a worst case of need. Nothing left
// covers nothing, not even a worst case of zero: a price of zero does not
// prove a call is free.
func Covers(left, need Nanocents) bool { return left > 0 && left >= need }

// Remaining is the budget neither spent nor held by an attempt in flight
// (never below zero).
func (j Job) Remaining() Nanocents {
	if j.Cost+j.Held >= j.Budget {
		return 0
	}
	return j.Budget - j.Cost - j.Held
}

// LeftAfter is the budget that will remain once the holder of the current
// claim settles its attempt at cost (returning the hold its claim took),
// never below zero: what the attempt may spend, with cost 0, and what the
// next attempt could use, with the attempt's cost.
func (j Job) LeftAfter(cost Nanocents) Nanocents {
	left := j.Budget - j.Cost - cost - (j.Held - j.Reserve)
	if left < 0 {
		return 0
	}
	return left
}

// ReplayAttempts is how many fresh attempts an operator's replay may give
// j: as many as asked (3 when not asked), but no more than its remaining
// budget covers at one reserve each, and none when not even one fits.
func ReplayAttempts(j Job, asked int) int {
	if asked <= 0 {
		asked = 3
	}
	left := j.Remaining()
	if !Covers(left, j.Reserve) {
		return 0
	}
	if j.Reserve > 0 {
		asked = int(min(int64(asked), int64(left/j.Reserve)))
	}
	return asked
}
