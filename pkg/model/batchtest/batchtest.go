// Package batchtest is what the fake batch servers (openaitest,
// anthropictest, bedrocktest) share, each adapting it to its provider's
// wire: a batch's life (made, read Polls times while it runs, then run
// and ended), the newest-first pages a listing reads, the item markers a
// test scripts an item with, how often each item was generated, the
// expiry of an item the first time it is batched, and the faults a create
// may be given (its answer lost, or refused before a batch is made).
//
// Nothing here locks: each server's own lock guards its Batches, as it
// guards the wire's state around it, so one server call stays one step.
package batchtest

import (
	"encoding/json"
	"net/http"
	"regexp"
	"strconv"
	"strings"
)

// Batches is a server's batches, newest last, and the ledger of what it
// answered. Its zero value is ready.
type Batches[B any] struct {
	list    []*Batch[B]
	made    map[string]int
	expired map[string]bool
	lose    int
	refuse  int
	calls   int
}

// Batch is one batch: its id, its life, and the wire's own state of it.
type Batch[B any] struct {
	ID    string
	Wire  B
	polls int
	ran   bool
}

// Add makes a batch, newest of all.
func (s *Batches[B]) Add(id string, wire B) *Batch[B] {
	b := &Batch[B]{ID: id, Wire: wire}
	s.list = append(s.list, b)
	return b
}

// Len is how many batches were made.
func (s *Batches[B]) Len() int { return len(s.list) }

// All is every batch, oldest first.
func (s *Batches[B]) All() []*Batch[B] { return s.list }

// Find is the batch id, or nil.
func (s *Batches[B]) Find(id string) *Batch[B] {
	for _, b := range s.list {
		if b.ID == id {
			return b
		}
	}
	return nil
}

// Page is up to limit batches, newest first, from the one made before
// batch after (from the newest when after is "" or names none), and
// whether more follow it.
func (s *Batches[B]) Page(after string, limit int) ([]*Batch[B], bool) {
	from := len(s.list) - 1
	for i, b := range s.list {
		if after != "" && b.ID == after {
			from = i - 1
		}
	}
	var page []*Batch[B]
	i := from
	for ; i >= 0 && len(page) < limit; i-- {
		page = append(page, s.list[i])
	}
	return page, i >= 0
}

// Limit is a listing's page size: the query's limit when it is a number
// from 1 to most, else the 20 both providers' listings default to.
func Limit(query string, most int) int {
	n, err := strconv.Atoi(query)
	if err != nil || n < 1 || n > most {
		return 20
	}
	return n
}

// Read counts one read of b and reports whether b is due to run: read
// more than polls times and not yet run. A run that fails may call
// Unrun, so that the next read tries again.
func (b *Batch[B]) Read(polls int) bool {
	b.polls++
	if b.polls <= polls || b.ran {
		return false
	}
	b.ran = true
	return true
}

// Unrun undoes Read's due answer: the run did not happen.
func (b *Batch[B]) Unrun() { b.ran = false }

// Ran reports whether b has run.
func (b *Batch[B]) Ran() bool { return b.ran }

// LoseCreates makes the next n creates lose their answer after the batch
// was made (Lost).
func (s *Batches[B]) LoseCreates(n int) { s.lose = n }

// RefuseCreates makes the next n creates be refused before a batch is
// made (Refused).
func (s *Batches[B]) RefuseCreates(n int) { s.refuse = n }

// Refused reports whether this create is refused, counting it.
func (s *Batches[B]) Refused() bool {
	if s.refuse == 0 {
		return false
	}
	s.refuse--
	return true
}

// Lost reports whether this create's answer is lost, counting it.
func (s *Batches[B]) Lost() bool {
	if s.lose == 0 {
		return false
	}
	s.lose--
	return true
}

// Generate counts one answer (a billed generation) of item id.
func (s *Batches[B]) Generate(id string) {
	if s.made == nil {
		s.made = map[string]int{}
	}
	s.made[id]++
}

// Generated is how often item id was answered.
func (s *Batches[B]) Generated(id string) int { return s.made[id] }

// ExpireOnce reports whether item id expires now: the first time it is
// asked, never again, so a resubmitted item is answered.
func (s *Batches[B]) ExpireOnce(id string) bool {
	if s.expired[id] {
		return false
	}
	if s.expired == nil {
		s.expired = map[string]bool{}
	}
	s.expired[id] = true
	return true
}

// Call counts one call answered outside batches and is its number.
func (s *Batches[B]) Call() int {
	s.calls++
	return s.calls
}

// Calls is how many calls were answered outside batches.
func (s *Batches[B]) Calls() int { return s.calls }

// Markers are the markers an item's last message may carry, of one
// provider P: [[P:expire]], [[P:nousage]], and [[P:fail]] with fail a
// pattern whose first group is the failure's value.
type Markers struct {
	expire, noUsage string
	fail            *regexp.Regexp
}

// NewMarkers are provider's markers; fail is the failing marker's inside
// (e.g. `status=(\d{3})`).
func NewMarkers(provider, fail string) Markers {
	return Markers{expire: "[[" + provider + ":expire]]", noUsage: "[[" + provider + ":nousage]]",
		fail: regexp.MustCompile(`\[\[` + regexp.QuoteMeta(provider) + `:` + fail + `\]\]`)}
}

// Script is what an item's markers ask of it.
type Script struct {
	// Expire leaves the item unanswered the first time it is batched
	// (with ExpireOnce).
	Expire bool
	// Fail is the failing marker's value ("": none).
	Fail string
	// NoUsage answers the item without its counts.
	NoUsage bool
}

// Read is the script of an item whose last message is last.
func (m Markers) Read(last string) Script {
	sc := Script{Expire: strings.Contains(last, m.expire), NoUsage: strings.Contains(last, m.noUsage)}
	if f := m.fail.FindStringSubmatch(last); f != nil {
		sc.Fail = f[1]
	}
	return sc
}

// Reply writes v as a JSON answer.
func Reply(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

// Created answers a create with v, or, when lost, closes the connection
// unanswered, as a caller whose create landed but who died mid-call sees
// it.
func Created(w http.ResponseWriter, v any, lost bool) {
	if lost {
		if conn, _, err := http.NewResponseController(w).Hijack(); err == nil {
			_ = conn.Close()
			return
		}
	}
	Reply(w, v)
}
