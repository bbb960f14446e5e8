package chaos

import (
	"fmt"
	"hash/fnv"
	"time"
)

// Seed makes every decision of a run a pure function of the seed and what
// is being decided (a job's index, an operation and its occurrence), so a
// run with the same seed replays the same schedule. Goroutines and
// processes still interleave differently from one run to the next; what
// is replayed is each job's plan and each call's fault, not the timing.
type Seed uint64

// Float is a number in [0, 1) for the decision named by parts.
func (s Seed) Float(parts ...any) float64 {
	return float64(s.Uint(parts...)>>11) / (1 << 53)
}

// Uint is 64 well-mixed bits for the decision named by parts.
func (s Seed) Uint(parts ...any) uint64 {
	h := fnv.New64a()
	fmt.Fprint(h, uint64(s))
	for _, p := range parts {
		fmt.Fprintf(h, "\x00%v", p)
	}
	return splitmix(h.Sum64())
}

// Intn is a number in [0, n).
func (s Seed) Intn(n int, parts ...any) int {
	if n <= 0 {
		return 0
	}
	return int(s.Uint(parts...) % uint64(n))
}

// Between is a duration in [lo, hi).
func (s Seed) Between(lo, hi time.Duration, parts ...any) time.Duration {
	if hi <= lo {
		return lo
	}
	return lo + time.Duration(s.Float(parts...)*float64(hi-lo))
}

func splitmix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}
