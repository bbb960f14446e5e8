package notifier_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/aijobs/aijobs/pkg/job"
	"github.com/aijobs/aijobs/pkg/memstore"
	"github.com/aijobs/aijobs/pkg/notifier"
	"github.com/aijobs/aijobs/pkg/webhook"
	"github.com/aijobs/aijobs/pkg/wire"
)

func message(id string, version int64, state job.State, receives int) events.SQSMessage {
	body, _ := json.Marshal(notifier.Notice{JobID: id, Version: version, State: string(state)})
	return events.SQSMessage{MessageId: "m-" + id + strconv.Itoa(receives), ReceiptHandle: "rh-" + id, Body: string(body),
		Attributes: map[string]string{"ApproximateReceiveCount": strconv.Itoa(receives)}}
}

func deliver(t *testing.T, f *fixture, ms ...events.SQSMessage) events.SQSEventResponse {
	t.Helper()
	resp, err := f.n.Deliver(t.Context(), events.SQSEvent{Records: ms})
	if err != nil {
		t.Fatalf("Deliver: %v", err)
	}
	return resp
}

func TestADeliveryIsSignedCarriesTheViewAndIsRecorded(t *testing.T) {
	f := newFixture(t)
	r := newReceiver(t, f.key())
	j := f.job(t, "a", job.Succeeded, r.srv.URL+"/hook")
	if resp := deliver(t, f, message(j.ID, 5, job.Succeeded, 1)); len(resp.BatchItemFailures) != 0 {
		t.Fatalf("failures %v", resp.BatchItemFailures)
	}
	got := r.deliveries()
	if len(got) != 1 || got[0].verified != nil {
		t.Fatalf("deliveries %d, verified %v", len(got), got)
	}
	if id := got[0].header.Get(webhook.HeaderID); id != wire.WebhookID(j.ID, 5) {
		t.Errorf("webhook-id %q", id)
	}
	var ev wire.WebhookEvent
	if err := json.Unmarshal(got[0].body, &ev); err != nil || ev.Type != "job.succeeded" || ev.Data.ID != j.ID || ev.Data.Version != 5 ||
		ev.Data.State != job.Succeeded || !ev.Timestamp.Equal(j.UpdatedAt) {
		t.Fatalf("event %+v %v", ev, err)
	}
	rec, _ := f.store.Get(t.Context(), j.ID)
	if d := rec.Deliveries; d.Attempts != 1 || d.LastStatus != http.StatusNoContent || d.DeliveredVersion != 5 || !d.DeliveredAt.Equal(t0) {
		t.Fatalf("record %+v", d)
	}
	// The same notice again (SQS delivers at least once): no second POST.
	deliver(t, f, message(j.ID, 5, job.Succeeded, 2))
	if len(r.deliveries()) != 1 {
		t.Fatalf("a repeated notice was delivered again")
	}
}

func TestAFailedDeliveryIsRetriedWithBackoffThenDeadLettered(t *testing.T) {
	f := newFixture(t)
	r := newReceiver(t, f.key())
	r.answer = func(int) (int, http.Header, time.Duration) { return http.StatusInternalServerError, nil, 0 }
	j := f.job(t, "b", job.Failed, r.srv.URL)
	for attempt := 1; attempt <= 3; attempt++ {
		m := message(j.ID, 5, job.Failed, attempt)
		resp := deliver(t, f, m)
		if len(resp.BatchItemFailures) != 1 || resp.BatchItemFailures[0].ItemIdentifier != m.MessageId {
			t.Fatalf("attempt %d: failures %v", attempt, resp.BatchItemFailures)
		}
		// job.Backoff with no jitter: half of base x 2^(attempt-1).
		want := job.Backoff(attempt, 5*time.Second, time.Hour, 0)
		if got := f.queue.hidden[m.ReceiptHandle]; got != want {
			t.Fatalf("attempt %d hidden for %v, want %v", attempt, got, want)
		}
	}
	m := message(j.ID, 5, job.Failed, 4) // the schedule's last attempt
	if resp := deliver(t, f, m); len(resp.BatchItemFailures) != 0 || f.queue.dead[m.Body] != "callback_gave_up" {
		t.Fatalf("last attempt: failures %v, dead %v", resp.BatchItemFailures, f.queue.dead)
	}
	rec, _ := f.store.Get(t.Context(), j.ID)
	if d := rec.Deliveries; d.Attempts != 4 || d.LastStatus != 500 || d.DeliveredVersion != 0 || !d.DeliveredAt.IsZero() {
		t.Fatalf("record %+v", d)
	}
	for _, d := range r.deliveries() {
		if d.verified != nil || d.header.Get(webhook.HeaderID) != wire.WebhookID(j.ID, 5) {
			t.Fatalf("a retry changed its id or signature: %v %v", d.header, d.verified)
		}
	}
}

func TestTheReceiversRetryAfterAndGoneAreHonoured(t *testing.T) {
	f := newFixture(t)
	r := newReceiver(t, f.key())
	r.answer = func(int) (int, http.Header, time.Duration) {
		return http.StatusTooManyRequests, http.Header{"Retry-After": {"120"}}, 0
	}
	j := f.job(t, "c", job.Succeeded, r.srv.URL)
	m := message(j.ID, 5, job.Succeeded, 1)
	deliver(t, f, m)
	if got := f.queue.hidden[m.ReceiptHandle]; got != 2*time.Minute {
		t.Fatalf("hidden %v, want the receiver's Retry-After (2m)", got)
	}
	r.answer = func(int) (int, http.Header, time.Duration) { return http.StatusGone, nil, 0 }
	if resp := deliver(t, f, message(j.ID, 5, job.Succeeded, 2)); len(resp.BatchItemFailures) != 0 || len(f.queue.dead) != 0 {
		t.Fatalf("410: failures %v dead %v", resp.BatchItemFailures, f.queue.dead)
	}
}

func TestASlowReceiverTimesOutAndIsRetried(t *testing.T) {
	f := newFixture(t)
	r := newReceiver(t, f.key())
	r.answer = func(int) (int, http.Header, time.Duration) { return http.StatusOK, nil, 3 * time.Second }
	j := f.job(t, "d", job.Succeeded, r.srv.URL)
	start := time.Now()
	resp := deliver(t, f, message(j.ID, 5, job.Succeeded, 1))
	if len(resp.BatchItemFailures) != 1 || time.Since(start) > 2*time.Second {
		t.Fatalf("failures %v after %v", resp.BatchItemFailures, time.Since(start))
	}
	rec, _ := f.store.Get(t.Context(), j.ID)
	if rec.Deliveries.Attempts != 1 || rec.Deliveries.LastStatus != 0 {
		t.Fatalf("record %+v", rec.Deliveries)
	}
}

func TestNoticesThatNeedNoDeliveryAreDropped(t *testing.T) {
	f := newFixture(t)
	r := newReceiver(t, f.key())
	superseded := f.job(t, "e", job.Queued, r.srv.URL) // a retry took it back to queued
	delivered := f.job(t, "f", job.Succeeded, r.srv.URL)
	if _, err := f.store.RecordDelivery(t.Context(), job.Delivery{ID: delivered.ID, Now: t0, Version: 7, Status: 200, Delivered: true}); err != nil {
		t.Fatal(err)
	}
	bad := events.SQSMessage{MessageId: "bad", Body: `{"job":`}
	resp := deliver(t, f,
		message(superseded.ID, 5, job.Running, 1),
		message(delivered.ID, 6, job.Succeeded, 1), // an older write's notice
		message(job.NewID("tenant", "expired"), 5, job.Failed, 1),
		bad)
	if len(resp.BatchItemFailures) != 0 || len(r.deliveries()) != 0 || f.queue.dead[bad.Body] != "invalid_notice" {
		t.Fatalf("failures %v, %d deliveries, dead %v", resp.BatchItemFailures, len(r.deliveries()), f.queue.dead)
	}
}

func TestATargetThatNowResolvesPrivatelyIsGivenUpAtOnce(t *testing.T) {
	f := newFixture(t, func(c *notifier.Config) { c.HTTP = webhook.Policy{}.Client(time.Second) })
	r := newReceiver(t, f.key())
	j := f.job(t, "g", job.Succeeded, r.srv.URL) // checked at create, loopback now
	m := message(j.ID, 5, job.Succeeded, 1)
	if resp := deliver(t, f, m); len(resp.BatchItemFailures) != 0 || f.queue.dead[m.Body] != "callback_gave_up" || len(r.deliveries()) != 0 {
		t.Fatalf("failures %v, dead %v, %d deliveries", resp.BatchItemFailures, f.queue.dead, len(r.deliveries()))
	}
}

func TestDuringARotationBothSecretsSign(t *testing.T) {
	next, _ := webhook.NewSecret()
	f := newFixture(t)
	prev := f.secret
	f = newFixture(t, func(c *notifier.Config) { c.Secrets = []webhook.Secret{next, prev} })
	for i, secrets := range [][]webhook.Secret{{prev}, {next}} {
		r := newReceiver(t, secrets[0].ForTenant("tenant", 1))
		j := f.job(t, "rot-"+strconv.Itoa(i), job.Succeeded, r.srv.URL)
		deliver(t, f, message(j.ID, 5, job.Succeeded, 1))
		if got := r.deliveries(); len(got) != 1 || got[0].verified != nil {
			t.Fatalf("a receiver that knows one of the two secrets: %v", got)
		}
	}
}

// faultyStore fails reads while readFails > 0 and records while
// recordFails > 0, each failure after the write landed when landed is set
// (the SDK's answer lost), as issue F's faults do.
type faultyStore struct {
	*memstore.Store
	readFails, recordFails int
	landed                 bool
}

func (s *faultyStore) Get(ctx context.Context, id string) (job.Job, error) {
	if s.readFails > 0 {
		s.readFails--
		return job.Job{}, &job.Error{Code: job.CodeUnavailable, Message: "the job store is unavailable", Err: errors.New("dynamodb: i/o timeout")}
	}
	return s.Store.Get(ctx, id)
}

func (s *faultyStore) RecordDelivery(ctx context.Context, d job.Delivery) (job.Job, error) {
	if s.recordFails > 0 {
		s.recordFails--
		if s.landed {
			_, _ = s.Store.RecordDelivery(ctx, d)
		}
		return job.Job{}, &job.Error{Code: job.CodeUnavailable, Message: "the job store is unavailable", Err: errors.New("dynamodb: connection reset")}
	}
	return s.Store.RecordDelivery(ctx, d)
}

func TestAStoreThatFailsNeverLosesADeliveryNorSendsItTwice(t *testing.T) {
	f := newFixture(t)
	fs := &faultyStore{Store: f.store, readFails: 1}
	f = newFixtureWith(t, f, func(c *notifier.Config) { c.Store = fs })
	r := newReceiver(t, f.key())
	j := f.job(t, "h", job.Succeeded, r.srv.URL)

	// The read fails: no POST, the notice comes back later.
	if resp := deliver(t, f, message(j.ID, 5, job.Succeeded, 1)); len(resp.BatchItemFailures) != 1 || len(r.deliveries()) != 0 {
		t.Fatalf("unreadable job: failures %v, %d deliveries", resp.BatchItemFailures, len(r.deliveries()))
	}
	// The record write fails twice after landing, then works: the delivery
	// stands, is recorded, and a repeat of the notice sends nothing.
	fs.recordFails, fs.landed = 2, true
	if resp := deliver(t, f, message(j.ID, 5, job.Succeeded, 2)); len(resp.BatchItemFailures) != 0 || len(r.deliveries()) != 1 {
		t.Fatalf("failures %v, %d deliveries", resp.BatchItemFailures, len(r.deliveries()))
	}
	rec, _ := f.store.Get(t.Context(), j.ID)
	if rec.Deliveries.DeliveredVersion != 5 {
		t.Fatalf("record %+v", rec.Deliveries)
	}
	deliver(t, f, message(j.ID, 5, job.Succeeded, 3))
	if len(r.deliveries()) != 1 {
		t.Fatal("a recorded delivery was sent again")
	}
}

// TestADeliveryVerifiesOnlyWithItsTenantsKey: a job's owner may point its
// callback_url at another tenant's receiver; that receiver, holding its own
// key (or even the deployment secret), must not verify the delivery, and
// the owner's own key must.
func TestADeliveryVerifiesOnlyWithItsTenantsKey(t *testing.T) {
	f := newFixture(t)
	for name, tt := range map[string]struct {
		key  webhook.Secret
		want error
	}{
		"the job's tenant's key": {f.key(), nil},
		"another tenant's key":   {f.secret.ForTenant("tenant-b", 1), webhook.ErrNoMatch},
		"the deployment secret":  {f.secret, webhook.ErrNoMatch},
		"the tenant's next key":  {f.secret.ForTenant("tenant", 2), webhook.ErrNoMatch},
	} {
		r := newReceiver(t, tt.key)
		j := f.job(t, "k-"+strings.ReplaceAll(name, " ", "-"), job.Succeeded, r.srv.URL)
		deliver(t, f, message(j.ID, 5, job.Succeeded, 1))
		if got := r.deliveries(); len(got) != 1 || got[0].verified != tt.want {
			t.Errorf("%s: %d deliveries, verified = %v, want %v", name, len(got), got, tt.want)
		}
	}
}

// keys is a tenant key table with one answer for every tenant.
type keys struct {
	k   job.WebhookKeys
	err error
}

func (k keys) WebhookKeys(_ context.Context, tenant string) (job.WebhookKeys, error) {
	out := k.k
	out.Tenant = tenant
	return out, k.err
}

// TestARotatedKeySignsBesideTheNewOneForADay: after a tenant rotates, its
// deliveries carry the new key's signature and, for job.KeyOverlap, the
// old one's; after that, the new one's only.
func TestARotatedKeySignsBesideTheNewOneForADay(t *testing.T) {
	rotated := job.FirstWebhookKeys("tenant").Rotate(t0.Add(-time.Hour))
	f := newFixture(t, func(c *notifier.Config) { c.Keys = keys{k: rotated} })
	for i, v := range []int{1, 2} {
		r := newReceiver(t, f.secret.ForTenant("tenant", v))
		j := f.job(t, "rot-v"+strconv.Itoa(i), job.Succeeded, r.srv.URL)
		deliver(t, f, message(j.ID, 5, job.Succeeded, 1))
		if got := r.deliveries(); len(got) != 1 || got[0].verified != nil {
			t.Fatalf("during the overlap, a receiver with version %d: %v", v, got)
		}
	}
	old := job.FirstWebhookKeys("tenant").Rotate(t0.Add(-job.KeyOverlap))
	f = newFixtureWith(t, f, func(c *notifier.Config) { c.Keys = keys{k: old} })
	r := newReceiver(t, f.secret.ForTenant("tenant", 1))
	j := f.job(t, "rot-after", job.Succeeded, r.srv.URL)
	deliver(t, f, message(j.ID, 5, job.Succeeded, 1))
	if got := r.deliveries(); len(got) != 1 || got[0].verified != webhook.ErrNoMatch {
		t.Fatalf("after the overlap, the old key still verifies: %v", got)
	}
}

// TestUnreadableKeyVersionsDeliverNothingAndCountNoAttempt: a delivery
// whose tenant's key versions cannot be read is not sent (with the wrong
// key it would not verify) and is not an attempt: the notice returns.
func TestUnreadableKeyVersionsDeliverNothingAndCountNoAttempt(t *testing.T) {
	f := newFixture(t, func(c *notifier.Config) {
		c.Keys = keys{err: &job.Error{Code: job.CodeUnavailable, Message: "tenants table down"}}
	})
	r := newReceiver(t, f.key())
	j := f.job(t, "down", job.Succeeded, r.srv.URL)
	m := message(j.ID, 5, job.Succeeded, 1)
	if resp := deliver(t, f, m); len(resp.BatchItemFailures) != 1 {
		t.Fatalf("the notice is done: %v", resp.BatchItemFailures)
	}
	rec, _ := f.store.Get(t.Context(), j.ID)
	if len(r.deliveries()) != 0 || rec.Deliveries.Attempts != 0 {
		t.Fatalf("%d deliveries, %d attempts recorded", len(r.deliveries()), rec.Deliveries.Attempts)
	}
}
