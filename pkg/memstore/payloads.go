package memstore

import (
	"context"
	"sync"

	"github.com/aijobs/aijobs/pkg/job"
)

// Payloads is the payload store in memory (pkg/s3's Payloads on S3,
// docs/payloads.md): what the API, the worker and the collector put and
// get, with the faults their tests inject, a store that does not answer
// and puts refused a number of times.
type Payloads struct {
	mu      sync.Mutex
	objects map[string]payload
	down    bool
	refuse  int // puts still to refuse; negative: every one
	puts    int
	gets    int
}

type payload struct {
	body        []byte
	contentType string
}

// NewPayloads is an empty store that answers.
func NewPayloads() *Payloads { return &Payloads{objects: map[string]payload{}} }

// SetDown makes every call fail as unavailable while down, as S3 out of
// reach does (pkg/s3's errors).
func (p *Payloads) SetDown(down bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.down = down
}

// RefusePuts refuses the next n puts as unavailable (every one when n is
// negative).
func (p *Payloads) RefusePuts(n int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.refuse = n
}

// Put stores body at key; each call counts, refused or not.
func (p *Payloads) Put(_ context.Context, key string, body []byte, contentType string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.puts++
	if p.down || p.refuse != 0 {
		if p.refuse > 0 {
			p.refuse--
		}
		return unavailablePayloads()
	}
	p.objects[key] = payload{body: append([]byte(nil), body...), contentType: contentType}
	return nil
}

// Get reads key, at most limit bytes, as pkg/s3's Payloads.Get answers.
func (p *Payloads) Get(_ context.Context, key string, limit int64) ([]byte, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.gets++
	if p.down {
		return nil, unavailablePayloads()
	}
	o, ok := p.objects[key]
	switch {
	case !ok:
		return nil, job.NotFound()
	case int64(len(o.body)) > limit:
		return nil, job.Errorf(job.CodeTooLarge, "the object is larger than %d bytes", limit)
	}
	return append([]byte(nil), o.body...), nil
}

// Delete removes key; a key not there is no error, as in S3.
func (p *Payloads) Delete(_ context.Context, key string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.down {
		return unavailablePayloads()
	}
	delete(p.objects, key)
	return nil
}

// Object is what key holds and its content type, for a test's look.
func (p *Payloads) Object(key string) (body []byte, contentType string, ok bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	o, ok := p.objects[key]
	return o.body, o.contentType, ok
}

// Keys are the keys held, in no order.
func (p *Payloads) Keys() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	keys := make([]string, 0, len(p.objects))
	for k := range p.objects {
		keys = append(keys, k)
	}
	return keys
}

// Calls are the puts and gets asked so far, refused ones included.
func (p *Payloads) Calls() (puts, gets int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.puts, p.gets
}

func unavailablePayloads() error {
	return &job.Error{Code: job.CodeUnavailable, Message: "the payload store is unavailable"}
}
