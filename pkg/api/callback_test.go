package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/aijobs/aijobs/pkg/job"
	"github.com/aijobs/aijobs/pkg/webhook"
	"github.com/aijobs/aijobs/pkg/wire"
)

func TestCreateRecordsACallbackAndShowsIt(t *testing.T) {
	e := newEnv(t)
	resp := e.do(t, createReq(t, "cb-1", withInput(`,"callback_url":"https://hooks.example.com/aijobs?k=v","callback_events":["succeeded","running"]`)))
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("create: %d %s", resp.StatusCode, resp.Body)
	}
	var v wire.View
	if err := json.Unmarshal([]byte(resp.Body), &v); err != nil {
		t.Fatal(err)
	}
	cb := v.Callback
	if cb == nil || cb.URL != "https://hooks.example.com/aijobs?k=v" || !slices.Equal(cb.Events, []job.State{job.Running, job.Succeeded}) ||
		cb.Attempts != 0 || cb.LastStatus != 0 || cb.DeliveredAt != nil || cb.DeliveredVersion != 0 {
		t.Fatalf("callback view %+v", cb)
	}
	if !strings.Contains(resp.Body, `"delivered_at":null`) {
		t.Errorf("delivered_at is not null before any delivery: %s", resp.Body)
	}
	j, err := e.store.Get(t.Context(), v.ID)
	if err != nil || j.Callback.URL != cb.URL || !slices.Equal(j.Callback.Events, cb.Events) {
		t.Fatalf("record %+v %v", j.Callback, err)
	}

	// No events named: the terminal ones, shown as such.
	resp = e.do(t, createReq(t, "cb-2", withInput(`,"callback_url":"https://hooks.example.com/x"`)))
	if err := json.Unmarshal([]byte(resp.Body), &v); err != nil || !slices.Equal(v.Callback.Events, job.TerminalEvents) {
		t.Fatalf("default events: %s", resp.Body)
	}
	// No callback: no member at all.
	resp = e.do(t, createReq(t, "cb-3", simpleBody))
	if strings.Contains(resp.Body, `"callback"`) {
		t.Fatalf("a job without a callback shows one: %s", resp.Body)
	}
}

func TestCreateRefusesACallbackItMayNotCall(t *testing.T) {
	for _, c := range []struct{ name, rest string }{
		{"a private address", `,"callback_url":"https://internal.example/hook"`},
		{"instance metadata", `,"callback_url":"http://169.254.169.254/latest/meta-data/"`},
		{"loopback in production", `,"callback_url":"http://127.0.0.1:9000/hook"`},
		{"plain http", `,"callback_url":"http://hooks.example.com/hook"`},
		{"a host that does not resolve", `,"callback_url":"https://nowhere.example/hook"`},
		{"not a URL", `,"callback_url":"hooks.example.com"`},
		{"credentials", `,"callback_url":"https://u:p@hooks.example.com/"`},
		{"not a string", `,"callback_url":42`},
		{"empty", `,"callback_url":""`},
		{"too long", `,"callback_url":"https://hooks.example.com/` + strings.Repeat("a", 2100) + `"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t)
			resp := e.do(t, createReq(t, "k", withInput(c.rest)))
			p := decodeProblem(t, resp)
			if resp.StatusCode != http.StatusBadRequest || p.Code != wire.CodeInvalidRequest || p.Field != "callback_url" {
				t.Fatalf("%d %+v, want 400 invalid_request on callback_url", resp.StatusCode, p)
			}
			if strings.Contains(resp.Body, "internal.example") || strings.Contains(resp.Body, "10.0.0.5") {
				t.Errorf("the problem shows what the host resolved to: %s", resp.Body)
			}
			if e.store.Len() != 0 || e.queue.count() != 0 {
				t.Fatalf("a refused create wrote %d records and sent %d messages", e.store.Len(), e.queue.count())
			}
		})
	}
	for _, c := range []struct{ name, rest string }{
		{"events without a URL", `,"callback_events":["succeeded"]`},
		{"a state that is never an event", `,"callback_url":"https://hooks.example.com/x","callback_events":["queued"]`},
		{"no events", `,"callback_url":"https://hooks.example.com/x","callback_events":[]`},
		{"events not an array", `,"callback_url":"https://hooks.example.com/x","callback_events":"succeeded"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t)
			resp := e.do(t, createReq(t, "k", withInput(c.rest)))
			if p := decodeProblem(t, resp); resp.StatusCode != http.StatusBadRequest || p.Field != "callback_events" || e.store.Len() != 0 {
				t.Fatalf("%d %+v", resp.StatusCode, p)
			}
		})
	}
}

// TestACallbackPortOutsideTheTCPRangeIsRefused: a port no connection
// can be made to (0, above 65535, or named with a colon and no digits)
// would be accepted and then fail every delivery until the job
// dead-letters twelve hours later (issue O item 5.3). Ports 1 to 65535
// are callable.
func TestACallbackPortOutsideTheTCPRangeIsRefused(t *testing.T) {
	for _, url := range []string{"https://hooks.example.com:0/x", "https://hooks.example.com:99999/x", "https://hooks.example.com:65536/x",
		"https://hooks.example.com:/x", "https://hooks.example.com:", "https://hooks.example.com:00/x", "https://[2606:2800:220:1::]:/x"} {
		t.Run(url, func(t *testing.T) {
			e := newEnv(t)
			resp := e.do(t, createReq(t, "k", withInput(`,"callback_url":"`+url+`"`)))
			p := wantProblem(t, resp, http.StatusBadRequest, wire.CodeInvalidRequest, "callback_url")
			if !strings.Contains(p.Detail, "port") {
				t.Errorf("detail %q does not say the port is the matter", p.Detail)
			}
			if e.store.Len() != 0 || e.queue.count() != 0 {
				t.Fatalf("a refused create wrote %d records and sent %d messages", e.store.Len(), e.queue.count())
			}
		})
	}
	for i, url := range []string{"https://hooks.example.com:1/x", "https://hooks.example.com:8443/x", "https://hooks.example.com:65535/x", "https://hooks.example.com/x"} {
		e := newEnv(t)
		if resp := e.do(t, createReq(t, fmt.Sprint("ok-", i), withInput(`,"callback_url":"`+url+`"`))); resp.StatusCode != http.StatusAccepted {
			t.Errorf("%s: %d %s", url, resp.StatusCode, resp.Body)
		}
	}
}

func TestADeploymentWithoutCallbacksRefusesThem(t *testing.T) {
	e := newEnv(t)
	h := e.handler(e.store)
	h.callbacks = nil
	e.h = h
	resp := e.do(t, createReq(t, "k", withInput(`,"callback_url":"https://hooks.example.com/x"`)))
	if p := decodeProblem(t, resp); resp.StatusCode != http.StatusBadRequest || p.Field != "callback_url" || !strings.Contains(p.Detail, "no callbacks") {
		t.Fatalf("%d %+v", resp.StatusCode, p)
	}
}

// flippingResolver answers hooks.example.com until gone is set, then
// nothing, like a receiver's DNS record removed between two tries.
type flippingResolver struct{ gone *bool }

func (r flippingResolver) LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error) {
	if *r.gone {
		return nil, errors.New("no such host")
	}
	return testCallbacks.Resolver.LookupNetIP(ctx, network, host)
}

// TestARepeatIsARepeatWhenItsCallbackNoLongerResolves: the create's
// first try was recorded (its answer lost), then the callback host
// stopped resolving. The retry finds its job and is answered as a repeat;
// a new key with that host is still refused, and the key with another
// body is still the 422 it always was (issue V item 5).
func TestARepeatIsARepeatWhenItsCallbackNoLongerResolves(t *testing.T) {
	e := newEnv(t)
	gone := false
	e.h.callbacks = webhook.Checker{Resolver: flippingResolver{&gone}}
	body := withInput(`,"callback_url":"https://hooks.example.com/x"`)
	first := e.do(t, createReq(t, "dns-1", body))
	if first.StatusCode != http.StatusAccepted {
		t.Fatalf("first create: %d %s", first.StatusCode, first.Body)
	}
	id := decodeView(t, first).ID
	gone = true

	resp := e.do(t, createReq(t, "dns-1", body))
	if resp.StatusCode != http.StatusOK || resp.Headers["Idempotent-Replayed"] != "true" || decodeView(t, resp).ID != id {
		t.Fatalf("retry: %d %v %s, want 200 replayed of %s", resp.StatusCode, resp.Headers, resp.Body, id)
	}
	other := `{"input":{"messages":[{"role":"user","content":"bye"}]},"callback_url":"https://hooks.example.com/x"}`
	resp = e.do(t, createReq(t, "dns-1", other))
	if p := decodeProblem(t, resp); resp.StatusCode != http.StatusUnprocessableEntity || p.Code != wire.CodeKeyReused {
		t.Fatalf("another body: %d %+v, want 422 %s", resp.StatusCode, p, wire.CodeKeyReused)
	}
	resp = e.do(t, createReq(t, "dns-2", body))
	if p := decodeProblem(t, resp); resp.StatusCode != http.StatusBadRequest || p.Field != "callback_url" {
		t.Fatalf("a new key: %d %+v, want 400 on callback_url", resp.StatusCode, p)
	}
	if e.store.Len() != 1 {
		t.Fatalf("%d records, want 1", e.store.Len())
	}

	// A store that cannot say whether the key was used answers 503, not a
	// refusal the caller would give up on.
	e.h = e.handler(failingStore(&job.Error{Code: job.CodeUnavailable, Message: "throttled"}))
	e.h.callbacks = webhook.Checker{Resolver: flippingResolver{&gone}}
	resp = e.do(t, createReq(t, "dns-1", body))
	if p := decodeProblem(t, resp); resp.StatusCode != http.StatusServiceUnavailable || p.Code != wire.CodeUnavailable {
		t.Fatalf("store down: %d %+v, want 503 unavailable", resp.StatusCode, p)
	}
}
