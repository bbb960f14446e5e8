package job

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Lane is how a provider serves one call of a rung, and at what price: the
// same generation sold cheaper to a caller who can wait, dearer to one who
// cannot (docs/lanes.md, "Cost lanes"). A rung's own price is its
// standard lane's.
type Lane string

// The lanes. Flex and priority are the providers' service tiers on an
// ordinary call (OpenAI's and Bedrock's service_tier).
const (
	Standard Lane = "standard"
	Flex     Lane = "flex"
	Priority Lane = "priority"
)

// Lanes lists every lane a rung may offer, cheapest first as providers
// price them.
func Lanes() []Lane { return []Lane{Batch, Flex, Standard, Priority} }

// Valid reports whether l is a known lane.
func (l Lane) Valid() bool { return slices.Contains(Lanes(), l) }

// CheckLanes holds a job's allowed lanes to the known ones, without
// repeats: a refusal is an invalid_request naming the field "lanes".
func CheckLanes(ls []Lane) error {
	for i, l := range ls {
		if !l.Valid() {
			return invalid("lanes", "unknown lane %.32q; known: %s", l, laneNames(Lanes()))
		}
		if slices.Contains(ls[:i], l) {
			return invalid("lanes", "lane %q is named twice", l)
		}
	}
	return nil
}

func laneNames(ls []Lane) string {
	s := make([]string, len(ls))
	for i, l := range ls {
		s[i] = string(l)
	}
	return strings.Join(s, ", ")
}

// laneOf is g's lane, standard when unnamed.
func (g Rung) laneOf() Lane {
	if g.Lane == "" {
		return Standard
	}
	return g.Lane
}

// Offers are the ways rung g can be called: its standard lane (g itself)
// and each other lane it offers, each a rung of its own price, timeout and
// p99.
func (g Rung) Offers() []Rung {
	out := make([]Rung, 0, 1+len(g.Lanes))
	std := g
	std.Lanes, std.Lane = nil, Standard
	out = append(out, std)
	return append(out, g.Lanes...)
}

// InLane is rung g as served in lane l, and false when g does not offer
// l (its configuration changed since a call was made in it).
func (g Rung) InLane(l Lane) (Rung, bool) {
	if l == "" {
		l = Standard
	}
	for _, o := range g.Offers() {
		if o.Lane == l {
			return o, true
		}
	}
	return Rung{}, false
}

// P99 is how long a call in g's lane usually takes at worst: its
// configured p99 completion time, else its timeout.
func (g Rung) P99() time.Duration {
	if g.Completion > 0 {
		return g.Completion
	}
	return g.Timeout
}

// Saved is what a call that used t on g saved against its rung's
// standard lane: the standard price's bill less g's (negative for a
// premium lane, zero on the standard lane itself).
func (g Rung) Saved(t Tokens) Nanocents {
	if g.laneOf() == Standard || g.Base == (Price{}) {
		return 0
	}
	return g.Base.Bill(t) - g.Price.Bill(t)
}

// Served is lane g as the provider says it served a call: g itself when
// it says nothing ("") or names g's lane, and g's rung at its standard
// price when it served a call asked for in another lane at standard
// (OpenAI's priority processing past its ramp limit answers service_tier
// "default" and bills standard rates; Bedrock's ServiceTier says the
// same). A call is priced at the tier that served it, not the one asked.
func (g Rung) Served(l Lane) Rung {
	if l == "" || l == g.laneOf() || l != Standard || g.Base == (Price{}) {
		return g
	}
	std := g
	std.Lane, std.Price, std.Base = Standard, g.Base, Price{}
	return std
}

// allows reports whether a job that allows lanes (nil: any) may be
// served in l.
func allows(lanes []Lane, l Lane) bool { return len(lanes) == 0 || slices.Contains(lanes, l) }

// Plan is the lanes of rung g an attempt tries, in order, for a job that
// allows lanes (nil: any), with left until its deadline and avail of its
// budget: the offers whose worst case avail covers and whose p99 fits in
// left, cheapest first (a capacity refusal or a lane's own timeout moves
// the attempt on to the next). When no lane fits in left, the fastest
// that avail covers is tried alone: late may still be in time. Empty when
// g offers no allowed lane avail covers.
func (g Rung) Plan(in Input, lanes []Lane, left time.Duration, avail Nanocents) []Rung {
	var fit, late []Rung
	for _, o := range g.Offers() {
		if !allows(lanes, o.Lane) || !Covers(avail, o.WorstCase(in)) {
			continue
		}
		if o.P99() <= left {
			fit = append(fit, o)
		} else {
			late = append(late, o)
		}
	}
	if len(fit) > 0 {
		slices.SortStableFunc(fit, func(a, b Rung) int {
			return cmp.Or(cmp.Compare(a.WorstCase(in), b.WorstCase(in)), cmp.Compare(a.P99(), b.P99()))
		})
		return fit
	}
	if len(late) == 0 {
		return nil
	}
	return []Rung{slices.MinFunc(late, func(a, b Rung) int { return cmp.Compare(a.P99(), b.P99()) })}
}

// cheapest is the least worst case among g's offers a job allowing lanes
// may use, and false when it may use none.
func (g Rung) cheapest(in Input, lanes []Lane) (Nanocents, bool) {
	var least Nanocents
	found := false
	for _, o := range g.Offers() {
		if !allows(lanes, o.Lane) {
			continue
		}
		if wc := o.WorstCase(in); !found || wc < least {
			least, found = wc, true
		}
	}
	return least, found
}

// CheckOffered refuses a job allowing lanes on route r when no rung of r
// offers any of them: not one attempt could start.
func (r Route) CheckOffered(model string, lanes []Lane) error {
	if len(lanes) == 0 {
		return nil
	}
	var offered []Lane
	for _, g := range r.Rungs {
		for _, o := range g.Offers() {
			if allows(lanes, o.Lane) {
				return nil
			}
			if !slices.Contains(offered, o.Lane) {
				offered = append(offered, o.Lane)
			}
		}
	}
	return invalid("lanes", "route %q offers none of the lanes asked for (%s); it offers: %s", model, laneNames(lanes), laneNames(offered))
}

// String names a rung's provider, model and lane for logs.
func (g Rung) String() string { return fmt.Sprintf("%s/%s (%s)", g.Provider, g.Model, g.laneOf()) }

// AttemptLane is one attempt's entry in a record's lanes: the attempt's
// number and the lane of its last call.
type AttemptLane struct {
	Attempt int  `json:"attempt"`
	Lane    Lane `json:"lane"`
}

// WithAttemptLane is ls (in attempt order, then lane) with e in its
// place: a settlement repeated adds nothing, and an attempt settled twice
// in two lanes (a late settlement of a call its refused finish still
// paid for) keeps both, so every store answers the same set in the same
// order.
func WithAttemptLane(ls []AttemptLane, e AttemptLane) []AttemptLane {
	i, found := slices.BinarySearchFunc(ls, e, func(x, y AttemptLane) int {
		if x.Attempt != y.Attempt {
			return x.Attempt - y.Attempt
		}
		return strings.Compare(string(x.Lane), string(y.Lane))
	})
	if found {
		return ls
	}
	return slices.Insert(slices.Clone(ls), i, e)
}
