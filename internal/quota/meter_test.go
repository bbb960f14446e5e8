package quota

import (
	"testing"
	"time"
)

// clock is a meter's time, moved by hand.
type clock struct{ t time.Time }

func (c *clock) now() time.Time          { return c.t }
func (c *clock) advance(d time.Duration) { c.t = c.t.Add(d) }
func meterAt(l Limits, c *clock) *Meter  { m := newMeter(l); m.now = c.now; return m }
func allowed(m *Meter, s Scope) bool     { _, ok := m.allow([]Scope{s}, true); return ok }

// TestABucketRefusesWhileInDebt: a key starts with one second's units, is
// refused once they are spent, earns them back at its rate, and a request
// that overspends (its cost is known only after) leaves a debt the key
// waits out before it is let through again; another key is not touched.
func TestABucketRefusesWhileInDebt(t *testing.T) {
	c := &clock{t: time.Unix(1_000_000, 0)}
	m := meterAt(Limits{WriteUnits: 10}, c)
	hot, cold := Scope{Table: "t", Key: "hot"}, Scope{Table: "t", Key: "cold"}
	if !allowed(m, hot) {
		t.Fatal("a fresh key was refused")
	}
	m.charge(hot, 10, true)
	if allowed(m, hot) {
		t.Fatal("a key that spent its second's units was let through")
	}
	if !allowed(m, cold) {
		t.Fatal("another key was refused for the hot one's spending")
	}
	c.advance(500 * time.Millisecond)
	if !allowed(m, hot) {
		t.Fatal("half a second later the key holds 5 units and was refused")
	}
	m.charge(hot, 20, true) // 5 - 20: 15 in debt
	c.advance(time.Second)
	if allowed(m, hot) {
		t.Fatal("a second after a debt of 15 at 10 a second the key was let through")
	}
	c.advance(600 * time.Millisecond)
	if !allowed(m, hot) {
		t.Fatal("the debt was paid off and the key still refused")
	}
	if u := m.Usage(hot); u.Throttled != 2 || u.Write != 30 {
		t.Fatalf("hot key %+v, want 30 units and 2 refusals", u)
	}
	if u := m.Usage(Scope{Table: "t"}); u.Write != 30 {
		t.Fatalf("the table has %v units, want its keys' 30", u.Write)
	}
}

// TestTheHottestKeyIsTheNearestItsLimit: a read peak of 2,000 is nearer
// DynamoDB's 3,000 than a write peak of 500 is to 1,000, so the read key
// is the hotter; peaks are the most units within one wall-clock second,
// not the total.
func TestTheHottestKeyIsTheNearestItsLimit(t *testing.T) {
	c := &clock{t: time.Unix(1_000_000, 0)}
	m := meterAt(Limits{}, c)
	writes, reads := Scope{Table: "t", Key: "w"}, Scope{Table: "t", Key: "r"}
	m.charge(writes, 300, true)
	c.advance(time.Second)
	for range 3 { // 3 seconds of 500 writes: more in all than the reads
		m.charge(writes, 500, true)
		c.advance(time.Second)
	}
	m.charge(reads, 1500, false)
	c.advance(100 * time.Millisecond)
	m.charge(reads, 500, false)
	if h := m.Hottest(); h.Key != "r" || h.PeakRead != 2000 || m.Usage(writes).PeakWrite != 500 {
		t.Fatalf("hottest %+v (writes' peak %v), want the read key at a peak of 2,000", h, m.Usage(writes).PeakWrite)
	}
	m.Reset()
	if h := m.Hottest(); h.Key != "" {
		t.Fatalf("after Reset the hottest is %+v", h)
	}
}

// TestScaledLimits: a test at a hundredth of the load meets the walls at a
// hundredth of the rates and of the in-flight count.
func TestScaledLimits(t *testing.T) {
	l := AWS().Scaled(0.01)
	if l.WriteUnits != 10 || l.ReadUnits != 30 || l.InFlight != 1200 || l.ItemBytes != 409600 {
		t.Fatalf("AWS().Scaled(0.01) = %+v", l)
	}
}
