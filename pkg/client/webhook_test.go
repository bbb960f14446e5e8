package client_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/aijobs/aijobs/pkg/client"
	"github.com/aijobs/aijobs/pkg/job"
	"github.com/aijobs/aijobs/pkg/webhook"
	"github.com/aijobs/aijobs/pkg/wire"
)

// The receiver of docs/webhooks.md, as a user writes it: a handler that
// answers 2xx only for a verified event.
func receiver(secrets ...string) (http.Handler, *[]client.WebhookEvent) {
	var got []client.WebhookEvent
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ev, err := client.VerifyWebhook(r, secrets...)
		if err != nil {
			http.Error(w, "unverified", http.StatusUnauthorized)
			return
		}
		got = append(got, ev)
		w.WriteHeader(http.StatusNoContent)
	}), &got
}

func signedRequest(t *testing.T, secret webhook.Secret, at time.Time, ev wire.WebhookEvent) *http.Request {
	t.Helper()
	body, _ := json.Marshal(ev)
	h, err := webhook.Sign([]webhook.Secret{secret}, wire.WebhookID(ev.Data.ID, ev.Data.Version), at, body)
	if err != nil {
		t.Fatal(err)
	}
	r := httptest.NewRequest(http.MethodPost, "/hook", bytes.NewReader(body))
	for k, v := range h {
		r.Header[k] = v
	}
	return r
}

func TestVerifyWebhook(t *testing.T) {
	cur, curText := webhook.NewSecret()
	_, oldText := webhook.NewSecret()
	stranger, _ := webhook.NewSecret()
	ev := wire.WebhookEvent{Type: "job.succeeded", Timestamp: wire.Time{Time: time.Now().UTC()},
		Data: wire.View{ID: "job_abcdefghijklmnopqrstuvwxyz", State: job.Succeeded, Version: 4}}

	h, got := receiver(curText, oldText)
	w := httptest.NewRecorder()
	h.ServeHTTP(w, signedRequest(t, cur, time.Now(), ev))
	if w.Code != http.StatusNoContent || len(*got) != 1 || (*got)[0].Data.Version != 4 || (*got)[0].Type != "job.succeeded" {
		t.Fatalf("a verified delivery: %d %+v", w.Code, *got)
	}
	for name, r := range map[string]*http.Request{
		"another secret": signedRequest(t, stranger, time.Now(), ev),
		"replayed later": signedRequest(t, cur, time.Now().Add(-10*time.Minute), ev),
		"unsigned":       httptest.NewRequest(http.MethodPost, "/hook", bytes.NewReader([]byte(`{"type":"job.succeeded"}`))),
		"body tampered":  tampered(signedRequest(t, cur, time.Now(), ev)),
	} {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != http.StatusUnauthorized || len(*got) != 1 {
			t.Errorf("%s: %d, %d accepted", name, w.Code, len(*got))
		}
	}
	if _, err := client.VerifyWebhook(signedRequest(t, cur, time.Now(), ev), "not-a-secret"); !errors.Is(err, webhook.ErrSecret) {
		t.Errorf("a malformed secret: %v", err)
	}
}

func tampered(r *http.Request) *http.Request {
	var buf bytes.Buffer
	_, _ = buf.ReadFrom(r.Body)
	b := bytes.Replace(buf.Bytes(), []byte(`"version":4`), []byte(`"version":5`), 1)
	out := httptest.NewRequest(http.MethodPost, "/hook", bytes.NewReader(b))
	out.Header = r.Header
	return out
}
