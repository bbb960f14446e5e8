package job

import (
	"math/rand/v2"
	"strconv"
	"strings"
	"time"
)

// A key's bucket is split into parts, each a bucket of its own holding
// 1/n of the key's limit, so that no one item takes every call's writes
// (docs/ratelimits.md, "A key split into parts"): DynamoDB writes one
// item at most 1,000 units a second, and a call costs its bucket 2-3
// writes. A take goes to a random part, and so the parts' grants add up
// to the key's.
const (
	// PartRequests is the requests a minute one part carries at most by
	// default: 100 a second, which at the 3.5 writes a call TestWalls
	// measured on a key at its limit (a take, a refused try now and then,
	// a give, a lower) is 350 of an item's 1,000 write units a second:
	// room for a busy second. At 250 a second (the first choice) a part
	// ran at 875 and was throttled on 13% of its units.
	PartRequests = 6_000
	// MaxParts bounds the split: 64 parts carry 6,400 calls a second, and
	// a pause writes every part.
	MaxParts = 64
	// PartTries is how many parts a take tries before it answers the
	// wait: a part spent while another has room would defer a call the
	// key has room for, and each try costs a write (refused, when the
	// whole key is spent), so a take tries two others and no more.
	PartTries = 3
	// PartWait is the longest wait a part answers without another part
	// being tried: the parts are spread evenly, so a short wait says the
	// part is at its edge like the others (the whole key busy), and the
	// worker waits it in place, its next take going to a random part; a
	// longer one (a take of many tokens waiting for an idle part, or a
	// part fuller than the others) may defer the job, and is worth a
	// write on another part.
	PartWait = 100 * time.Millisecond
	// partPrefix starts a part's item key, "part#<i>#<key>"; a provider
	// entry's name holds no '#' and the other items of the buckets table
	// start "model#", "tenant#", "batch#" and "batches#", so no part is
	// another's key. Part 0 is the key's own item.
	partPrefix = "part#"
)

// Parts is how many parts a key's bucket at l is split into when one
// part carries at most per requests a minute: the requests over per,
// rounded up, at most MaxParts. A key that limits no requests (tokens
// alone say nothing of the calls' rate) and a limit learned from
// throttles (learned and halved on the key's one item, one ADD an
// answer) keep one part, as does a key of at most per.
func (l RateLimit) Parts(per int64) int {
	if l.Throttles || l.RequestsPerMinute <= 0 || per <= 0 {
		return 1
	}
	return int(min((l.RequestsPerMinute+per-1)/per, MaxParts))
}

// Part is l's share in one of n parts: each kind over n, at least one.
func (l RateLimit) Part(n int) RateLimit {
	if n <= 1 {
		return l
	}
	cut := func(v int64) int64 {
		if v <= 0 {
			return v
		}
		return max(v/int64(n), 1)
	}
	l.RequestsPerMinute, l.TokensPerMinute = cut(l.RequestsPerMinute), cut(l.TokensPerMinute)
	return l
}

// PartKey is the item key of part i of key's bucket (part 0: key itself,
// so a key of one part is the item it always was).
func PartKey(key string, i int) string {
	if i == 0 {
		return key
	}
	return partPrefix + strconv.Itoa(i) + "#" + key
}

// PartOf is the key and part of an item key PartKey made.
func PartOf(item string) (string, int) {
	rest, ok := strings.CutPrefix(item, partPrefix)
	if !ok {
		return item, 0
	}
	n, key, _ := strings.Cut(rest, "#")
	i, err := strconv.Atoi(n)
	if err != nil {
		return item, 0
	}
	return key, i
}

// PartOrder is the parts of n a take tries, in order: at most PartTries
// of them, chosen at random so that takers spread over every part.
func PartOrder(n int) []int {
	if n <= 1 {
		return []int{0}
	}
	order := rand.Perm(n)
	return order[:min(n, PartTries)]
}

// In is t as it applies to b, one of n parts of its key: its limit
// completed by b's learned one, then divided among the parts.
func (t Take) In(b Bucket, n int) Take {
	t = t.On(b)
	t.Limit = t.Limit.Part(n)
	return t
}
