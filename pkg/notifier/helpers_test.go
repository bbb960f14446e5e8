package notifier_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/aijobs/aijobs/pkg/job"
	"github.com/aijobs/aijobs/pkg/memstore"
	"github.com/aijobs/aijobs/pkg/notifier"
	"github.com/aijobs/aijobs/pkg/webhook"
)

var t0 = time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)

type clock struct{ now time.Time }

func (c clock) Now() time.Time { return c.now }

// queue records what the notifier asked of the callback queue.
type queue struct {
	mu      sync.Mutex
	sent    []string
	hidden  map[string]time.Duration
	dead    map[string]string // body -> reason
	failAll bool
}

func (q *queue) SendBody(_ context.Context, body string) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.failAll {
		return errors.New("sqs unavailable")
	}
	q.sent = append(q.sent, body)
	return nil
}

func (q *queue) ChangeVisibility(_ context.Context, receipt string, d time.Duration) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.hidden == nil {
		q.hidden = map[string]time.Duration{}
	}
	q.hidden[receipt] = d
	return nil
}

func (q *queue) DeadLetter(_ context.Context, body, reason string) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.failAll {
		return errors.New("sqs unavailable")
	}
	if q.dead == nil {
		q.dead = map[string]string{}
	}
	q.dead[body] = reason
	return nil
}

// receiver is a callback target that verifies what it gets.
type receiver struct {
	t       *testing.T
	secrets []webhook.Secret
	srv     *httptest.Server
	mu      sync.Mutex
	got     []delivery
	answer  func(n int) (status int, header http.Header, delay time.Duration)
}

type delivery struct {
	header   http.Header
	body     []byte
	verified error
}

func newReceiver(t *testing.T, secrets ...webhook.Secret) *receiver {
	r := &receiver{t: t, secrets: secrets, answer: func(int) (int, http.Header, time.Duration) { return http.StatusNoContent, nil, 0 }}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		n := len(r.got)
		// The clock is fixed at t0 by the notifier under test.
		r.got = append(r.got, delivery{header: req.Header.Clone(), body: body, verified: webhook.Verify(r.secrets, req.Header, body, t0, 0)})
		answer := r.answer
		r.mu.Unlock()
		status, h, delay := answer(n)
		if delay > 0 {
			select {
			case <-time.After(delay):
			case <-req.Context().Done():
			}
		}
		for k, v := range h {
			w.Header()[k] = v
		}
		w.WriteHeader(status)
	}))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *receiver) deliveries() []delivery {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]delivery(nil), r.got...)
}

// fixture is a notifier over a memory store, a recording queue and a
// loopback-allowed delivery client, with one secret.
type fixture struct {
	store  *memstore.Store
	queue  *queue
	secret webhook.Secret
	n      *notifier.Notifier
}

// key is the signing key of the fixture's tenant at version 1, what its
// receivers verify with.
func (f *fixture) key() webhook.Secret { return f.secret.ForTenant("tenant", 1) }

func newFixture(t *testing.T, mut ...func(*notifier.Config)) *fixture {
	secret, _ := webhook.NewSecret()
	return newFixtureWith(t, &fixture{store: memstore.New(), queue: &queue{}, secret: secret}, mut...)
}

// newFixtureWith builds f's notifier anew (its store, queue and secret
// kept), with mut applied to the configuration.
func newFixtureWith(t *testing.T, f *fixture, mut ...func(*notifier.Config)) *fixture {
	secret := f.secret
	cfg := notifier.Config{
		Store: f.store, Queue: f.queue, HTTP: webhook.Policy{AllowLoopback: true}.Client(time.Second),
		Secrets: []webhook.Secret{secret}, Retry: notifier.Retry{Base: 5 * time.Second, Max: time.Hour, Attempts: 4},
		Timeout: 500 * time.Millisecond, Clock: clock{t0}, Rand: func() float64 { return 0 },
	}
	for _, m := range mut {
		m(&cfg)
	}
	f.n = notifier.New(cfg)
	return f
}

// job stores a job in state with a callback to url.
func (f *fixture) job(t *testing.T, key string, state job.State, url string, events ...job.State) job.Job {
	t.Helper()
	j := job.Job{ID: job.NewID("tenant", key), Tenant: "tenant", RequestKey: key, InputHash: "sha256:" + key, Model: "default",
		State: state, MaxAttempts: 3, Budget: job.Cents(5), Deadline: t0.Add(time.Hour), Version: 5,
		CreatedAt: t0.Add(-time.Minute), UpdatedAt: t0.Add(-time.Second), Callback: job.Callback{URL: url, Events: events}}
	if _, err := f.store.Create(t.Context(), j); err != nil {
		t.Fatal(err)
	}
	return j
}
