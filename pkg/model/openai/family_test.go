package openai_test

import (
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/aijobs/aijobs/pkg/job"
	"github.com/aijobs/aijobs/pkg/model"
	"github.com/aijobs/aijobs/pkg/model/openai"
	"github.com/aijobs/aijobs/pkg/model/openai/openaitest"
)

// The client against the fake as OpenAI answers by model family
// (openaitest/family.go, docs/providers.md "OpenAI"): each family takes
// the body the client sends, in every wire and lane, and the usage and
// cost the client reports are the fake's bill, cached and reasoning
// tokens included.

// cachedPrice has cached rates, so a bill that lost its cached part would
// cost more than the fake's.
var cachedPrice = job.Price{InputPerToken: 1000, OutputPerToken: 4000, CachedInputPerToken: 100}

// familyModels are one model of each family.
var familyModels = []string{"gpt-5-mini", "o4-mini", "gpt-4o-mini"}

// fakeWires are the client's ways of calling: chat whole, streamed, and
// the Responses API in background.
var fakeWires = []struct {
	name               string
	stream, background bool
}{{"chat", false, false}, {"chat stream", true, false}, {"responses", false, true}}

func fakeClient(t *testing.T, url string, stream, background bool) *openai.Client {
	t.Helper()
	c, err := openai.New(openai.Config{BaseURL: url, APIKey: apiKey, Stream: stream, Background: background, PollEvery: pollEvery})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return c
}

func fakeRequest(modelName string, lane job.Lane) model.Request {
	return model.Request{Model: modelName, Messages: []job.Message{{Role: "user", Content: "tell me a story about a lighthouse"}},
		MaxTokens: 64, Lane: lane}
}

// billed is the fake's bill as the usage the client should report.
func billed(b openaitest.Bill) model.Usage {
	return model.Usage{InputTokens: b.Input, OutputTokens: b.Output, CachedInputTokens: b.Cached, ReasoningTokens: b.Reasoning}
}

func TestFamiliesAgainstTheFake(t *testing.T) {
	for _, name := range familyModels {
		for _, w := range fakeWires {
			for _, lane := range []job.Lane{job.Standard, job.Flex, job.Priority} {
				t.Run(fmt.Sprintf("%s %s %s", name, w.name, lane), func(t *testing.T) {
					s := &openaitest.Server{CachedTokens: 5}
					srv := httptest.NewServer(s.Handler())
					defer srv.Close()
					resp, err := fakeClient(t, srv.URL, w.stream, w.background).Generate(context.Background(), fakeRequest(name, lane))
					if err != nil {
						t.Fatalf("Generate: %v (the family refused the body?)", err)
					}
					bills := s.Bills()
					if len(bills) != 1 {
						t.Fatalf("%d bills, want 1", len(bills))
					}
					want := billed(bills[0])
					if resp.Usage != want || resp.Usage.Cost(cachedPrice) != cachedPrice.Bill(want.Tokens()) {
						t.Fatalf("usage %+v, want the fake's bill %+v", resp.Usage, want)
					}
					if want.CachedInputTokens != 5 || (want.ReasoningTokens > 0) != (name != "gpt-4o-mini") {
						t.Fatalf("the fake billed %+v: want 5 cached, reasoning only for a reasoning model", want)
					}
					if resp.Served != lane {
						t.Fatalf("served %q, want %q", resp.Served, lane)
					}
				})
			}
		}
	}
}

// A reasoning model refuses max_tokens (a server configured for the old
// name must not serve one) and a temperature but 1; an older one takes
// both.
func TestFamilyRefusals(t *testing.T) {
	warm := 0.7
	tests := []struct {
		model, field string
		temperature  *float64
		code         string // "" when served
		background   bool
	}{
		// The Responses API holds the same temperature rule.
		{"o4-mini", "", &warm, "http 400 unsupported_value invalid_request_error", true},
		{"gpt-5-nano", "", &warm, "http 400 unsupported_value invalid_request_error", true},
		{"gpt-4o-mini", "", &warm, "", true},
		// From gpt-5.1 on the default effort is none: temperature is
		// taken, max_tokens still refused.
		{"gpt-5.1", "", &warm, "", false},
		{"gpt-5.2-mini", "max_tokens", nil, "http 400 unsupported_parameter invalid_request_error", false},
		{"gpt-5-mini", "max_tokens", nil, "http 400 unsupported_parameter invalid_request_error", false},
		{"o4-mini", "max_tokens", nil, "http 400 unsupported_parameter invalid_request_error", false},
		{"gpt-5-mini", "", &warm, "http 400 unsupported_value invalid_request_error", false},
		{"o3", "", &warm, "http 400 unsupported_value invalid_request_error", false},
		{"gpt-4o-mini", "max_tokens", &warm, "", false},
		{"gpt-4.1-mini", "", &warm, "", false},
		{"gpt-5-chat-latest", "max_tokens", &warm, "", false},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s %q background=%v", tt.model, tt.field, tt.background), func(t *testing.T) {
			s := &openaitest.Server{}
			srv := httptest.NewServer(s.Handler())
			defer srv.Close()
			c, err := openai.New(openai.Config{BaseURL: srv.URL, APIKey: apiKey, MaxTokensField: tt.field, Background: tt.background, PollEvery: time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			r := fakeRequest(tt.model, job.Standard)
			r.Temperature = tt.temperature
			_, err = c.Generate(context.Background(), r)
			if tt.code == "" {
				if err != nil {
					t.Fatalf("Generate: %v, want it served", err)
				}
				return
			}
			var me *model.Error
			if !errors.As(err, &me) || me.Class != job.InvalidRequest || me.Detail != tt.code {
				t.Fatalf("err %v, want invalid_request %q", err, tt.code)
			}
		})
	}
}

// Priority processing past its ramp limit answers service_tier "default"
// and bills standard: the client says the call was served standard, in
// every wire.
func TestPriorityDowngraded(t *testing.T) {
	for _, w := range fakeWires {
		t.Run(w.name, func(t *testing.T) {
			s := &openaitest.Server{DowngradePriority: true}
			srv := httptest.NewServer(s.Handler())
			defer srv.Close()
			resp, err := fakeClient(t, srv.URL, w.stream, w.background).Generate(context.Background(), fakeRequest("gpt-5-mini", job.Priority))
			if err != nil {
				t.Fatal(err)
			}
			if resp.Served != job.Standard {
				t.Fatalf("served %q, want standard", resp.Served)
			}
		})
	}
}

// The flex pool's refusal is capacity_unavailable, unbilled and with no
// pause on the key, in every wire; the next call is served.
func TestFakeFlexRefusal(t *testing.T) {
	for _, w := range fakeWires {
		t.Run(w.name, func(t *testing.T) {
			s := &openaitest.Server{RefuseFlex: 1}
			srv := httptest.NewServer(s.Handler())
			defer srv.Close()
			c := fakeClient(t, srv.URL, w.stream, w.background)
			_, err := c.Generate(context.Background(), fakeRequest("o4-mini", job.Flex))
			var me *model.Error
			if !errors.As(err, &me) || me.Class != job.CapacityUnavailable || me.Pause != 0 || me.Usage != (model.Usage{}) {
				t.Fatalf("err %v, want capacity_unavailable, unpaused, unbilled", err)
			}
			if resp, err := c.Generate(context.Background(), fakeRequest("o4-mini", job.Flex)); err != nil || resp.Served != job.Flex {
				t.Fatalf("second call %+v, %v; want served flex", resp, err)
			}
		})
	}
}

// A batch line for each family is served, not refused (its body caps the
// output in max_completion_tokens), and each result's usage is the
// fake's bill, cached and reasoning parts included.
func TestFamiliesInABatch(t *testing.T) {
	s := &openaitest.Server{CachedTokens: 3}
	c := batchClient(t, s)
	var reqs []model.Request
	for _, name := range familyModels {
		r := fakeRequest(name, job.Batch)
		r.JobID = "job-" + name
		reqs = append(reqs, r)
	}
	id, err := c.SubmitBatch(t.Context(), "b_families", reqs)
	if err != nil {
		t.Fatal(err)
	}
	if ended, err := c.BatchEnded(t.Context(), id); err != nil || !ended {
		t.Fatalf("ended %v, %v", ended, err)
	}
	got := map[string]model.Usage{}
	err = c.BatchResults(t.Context(), id, func(job string, resp model.Response, err error) error {
		if err != nil {
			t.Errorf("%s: %v (refused?)", job, err)
		}
		if resp.Served != "" {
			t.Errorf("%s: served %q; a batch line is priced at the batch lane", job, resp.Served)
		}
		got[job] = resp.Usage
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	bills := s.Bills()
	if len(bills) != len(familyModels) {
		t.Fatalf("%d bills, want %d", len(bills), len(familyModels))
	}
	for _, b := range bills {
		if got[b.ID] != billed(b) || b.Cached != 3 {
			t.Errorf("%s: usage %+v, want the fake's bill %+v", b.ID, got[b.ID], billed(b))
		}
	}
}
