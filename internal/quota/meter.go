package quota

import (
	"cmp"
	"maps"
	"math"
	"slices"
	"sync"
	"time"
)

// Limits are the quotas a Front holds the emulator to.
type Limits struct {
	// ItemBytes is the largest item; 0 is DynamoDB's 400 KB.
	ItemBytes int
	// WriteUnits and ReadUnits are the units a second one partition key
	// value, of the table or of an index, may consume; 0 is no limit.
	// DynamoDB's are 1,000 and 3,000 (a partition's, and one key value
	// lives in one partition); a test scales them down with its load.
	WriteUnits, ReadUnits float64
	// Provisioned answers a throttle as a provisioned table does
	// (ProvisionedThroughputExceededException); otherwise as an on-demand
	// table, the stack's mode (ThrottlingException).
	Provisioned bool
	// InFlight is the most messages a queue may have in flight (received
	// and neither deleted nor visible again); 0 is no limit. SQS's is
	// about 120,000 on a standard queue
	// (https://docs.aws.amazon.com/AWSSimpleQueueService/latest/SQSDeveloperGuide/quotas-queues.html).
	InFlight int
}

// AWS is DynamoDB's own quotas per partition
// (https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/ServiceQuotas.html).
func AWS() Limits {
	return Limits{ItemBytes: maxItemBytes, WriteUnits: 1000, ReadUnits: 3000, InFlight: 120000}
}

// Scaled is l with its rates and its in-flight count times f: a test
// driving a hundredth of a real load meets the walls where a real load
// would with f = 0.01.
func (l Limits) Scaled(f float64) Limits {
	l.WriteUnits *= f
	l.ReadUnits *= f
	l.InFlight = int(math.Ceil(float64(l.InFlight) * f))
	return l
}

func (l Limits) withDefaults() Limits {
	if l.ItemBytes <= 0 {
		l.ItemBytes = maxItemBytes
	}
	return l
}

// Scope is what a meter counts: a table (Index and Key empty), one of its
// indexes (Key empty), or one partition key value of either.
type Scope struct {
	Table, Index, Key string
}

// Usage is what a scope consumed through the front.
type Usage struct {
	Scope
	// Read and Write are the units consumed, in all.
	Read, Write float64
	// PeakRead and PeakWrite are the most units consumed within one
	// wall-clock second: the rate a partition would have had to carry.
	PeakRead, PeakWrite float64
	// Throttled counts the requests refused for this key's rate.
	Throttled int
}

// Meter counts the units of every request through a Front, by scope.
type Meter struct {
	mu     sync.Mutex
	limits Limits
	now    func() time.Time
	use    map[Scope]*counter
}

// counter is one scope's usage, its current second, and (for a key) the
// token buckets that throttle it.
type counter struct {
	Usage
	second                  int64
	secRead, secWrite       float64
	readTokens, writeTokens float64
	filled                  time.Time
}

func newMeter(l Limits) *Meter {
	return &Meter{limits: l, now: time.Now, use: map[Scope]*counter{}}
}

// Usage is what s consumed.
func (m *Meter) Usage(s Scope) Usage {
	m.mu.Lock()
	defer m.mu.Unlock()
	if c, ok := m.use[s]; ok {
		return c.Usage
	}
	return Usage{Scope: s}
}

// All is every scope's usage, sorted by table, index and key.
func (m *Meter) All() []Usage {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]Usage, 0, len(m.use))
	for _, s := range slices.SortedFunc(maps.Keys(m.use), cmpScope) {
		out = append(out, m.use[s].Usage)
	}
	return out
}

// Hottest is the key whose peak second came nearest its partition's
// limit (write and read peaks each weighed against DynamoDB's own 1,000
// and 3,000, so a scaled-down run ranks as a real one would), or a zero
// Usage when no key was metered.
func (m *Meter) Hottest() Usage {
	heat := func(u Usage) float64 { return max(u.PeakWrite/AWS().WriteUnits, u.PeakRead/AWS().ReadUnits) }
	var best Usage
	for _, u := range m.All() {
		if u.Key != "" && (best.Key == "" || heat(u) > heat(best)) {
			best = u
		}
	}
	return best
}

// Reset forgets every count, so a test can measure one phase alone.
func (m *Meter) Reset() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.use = map[Scope]*counter{}
}

func cmpScope(a, b Scope) int {
	return cmp.Or(cmp.Compare(a.Table, b.Table), cmp.Compare(a.Index, b.Index), cmp.Compare(a.Key, b.Key))
}

// counter is s's counter, made on first use with full buckets.
func (m *Meter) counter(s Scope) *counter {
	c, ok := m.use[s]
	if !ok {
		c = &counter{Usage: Usage{Scope: s}, readTokens: m.limits.ReadUnits, writeTokens: m.limits.WriteUnits, filled: m.now()}
		m.use[s] = c
	}
	return c
}

// allow reports whether every key of keys may consume units now, or the
// first that may not (its Throttled counted). A key may while its bucket
// holds any units: a request's cost is known only once it is done, so it
// is charged after and may leave the bucket in debt, which the next
// requests wait out, as DynamoDB's partitions do with bursts.
func (m *Meter) allow(keys []Scope, write bool) (Scope, bool) {
	limit := m.limits.ReadUnits
	if write {
		limit = m.limits.WriteUnits
	}
	if limit <= 0 {
		return Scope{}, true
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.now()
	for _, s := range keys {
		c := m.counter(s)
		m.fill(c, now)
		tokens := c.readTokens
		if write {
			tokens = c.writeTokens
		}
		if tokens <= 0 {
			c.Throttled++
			return s, false
		}
	}
	return Scope{}, true
}

// fill adds to c's buckets what the time since their last fill earned,
// up to one second's worth.
func (m *Meter) fill(c *counter, now time.Time) {
	dt := now.Sub(c.filled).Seconds()
	c.filled = now
	c.readTokens = math.Min(m.limits.ReadUnits, c.readTokens+dt*m.limits.ReadUnits)
	c.writeTokens = math.Min(m.limits.WriteUnits, c.writeTokens+dt*m.limits.WriteUnits)
}

// charge counts units against key and against the table or index it
// belongs to; a key's buckets pay them.
func (m *Meter) charge(key Scope, units float64, write bool) {
	if units <= 0 {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.now()
	scopes := []Scope{{Table: key.Table, Index: key.Index}}
	if key.Key != "" {
		scopes = append(scopes, key)
	}
	for _, s := range scopes {
		c := m.counter(s)
		if sec := now.Unix(); sec != c.second {
			c.second, c.secRead, c.secWrite = sec, 0, 0
		}
		if write {
			c.Write += units
			c.secWrite += units
			c.PeakWrite = max(c.PeakWrite, c.secWrite)
		} else {
			c.Read += units
			c.secRead += units
			c.PeakRead = max(c.PeakRead, c.secRead)
		}
		if s.Key == "" {
			continue
		}
		m.fill(c, now)
		if write {
			c.writeTokens -= units
		} else {
			c.readTokens -= units
		}
	}
}
