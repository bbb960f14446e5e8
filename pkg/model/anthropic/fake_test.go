package anthropic_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/aijobs/aijobs/pkg/job"
	"github.com/aijobs/aijobs/pkg/model"
	"github.com/aijobs/aijobs/pkg/model/anthropic/anthropictest"
	"github.com/aijobs/aijobs/pkg/model/modeltest"
)

// claude4 are Claude 4 model ids, as the Messages API names them.
var claude4 = []string{"claude-sonnet-4-5-20250929", "claude-opus-4-1-20250805", "claude-haiku-4-5-20251001"}

// cachedPrice is a rung's price with Anthropic's cached rates: reads at a
// tenth of the input price, writes at 1.25 times it.
var cachedPrice = job.Price{InputPerToken: 300, OutputPerToken: 1500, CachedInputPerToken: 30, CacheWritePerToken: 375}

// Against the fake, as Anthropic answers, a Claude 4 call, whole or
// streamed, is billed every input token, the cache's reads and writes
// named apart, at exactly what Anthropic bills; its tier is read back
// when it says standard, and only then.
func TestAgainstTheFake(t *testing.T) {
	for _, name := range claude4 {
		for _, stream := range []bool{false, true} {
			for _, tier := range []string{"", "priority"} {
				t.Run(fmt.Sprintf("%s stream=%v tier=%q", name, stream, tier), func(t *testing.T) {
					s := &anthropictest.Server{CacheRead: 1800, CacheWrite: 240, Tier: tier}
					srv := httptest.NewServer(s.Handler())
					defer srv.Close()
					temp := 0.2
					r := request()
					r.Model, r.Temperature = name, &temp // temperature alone: a Claude 4 model takes it
					got, err := clientAt(t, srv.URL, stream).Generate(context.Background(), r)
					if err != nil {
						t.Fatalf("Generate: %v", err)
					}
					b := modeltest.OnlyBill(t, s.Billed())
					modeltest.CacheApart(t, got.Usage, modeltest.Counts{Input: b.Input, CacheRead: 1800, CacheWrite: 240, Output: b.Output})
					if cost, bill := got.Usage.Cost(cachedPrice), b.Bill(300, 1500); int64(cost) != bill {
						t.Fatalf("cost %d, Anthropic bills %d", cost, bill)
					}
					wantServed := job.Standard
					if tier != "" {
						wantServed = "" // a priority commitment is not a lane aijobs prices
					}
					if got.Served != wantServed || got.Model != name {
						t.Fatalf("served %q model %q, want %q %q", got.Served, got.Model, wantServed, name)
					}
				})
			}
		}
	}
}

// A batch's answers cache as a call's do, and name the batch tier: no
// lane but the batch lane they were asked in.
func TestTheFakesBatchAnswersCarryTheCache(t *testing.T) {
	s := &anthropictest.Server{Polls: 0, CacheRead: 500}
	c := batchClient(t, s)
	r := batchRequest("job-1", "hello")
	r.Model = claude4[0]
	id, err := c.SubmitBatch(context.Background(), "b1", []model.Request{r})
	if err != nil {
		t.Fatal(err)
	}
	var got model.Response
	if err := c.BatchResults(context.Background(), id, func(_ string, resp model.Response, err error) error {
		got = resp
		return err
	}); err != nil {
		t.Fatal(err)
	}
	b := s.Billed()[0]
	if want := (model.Usage{InputTokens: b.Input + 500, OutputTokens: b.Output, CachedInputTokens: 500}); got.Usage != want || got.Served != "" {
		t.Fatalf("usage %+v served %q, want %+v and no lane", got.Usage, got.Served, want)
	}
}

// A job with both temperature and top_p is refused at create on a
// Claude 4 rung (job.Takes.TemperatureOrTopP), so such a model never
// sees the pair; the fake, as Anthropic, refuses it on those models
// only.
func TestTemperatureWithTopPIsRefusedOnClaude4(t *testing.T) {
	var sent map[string]any
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = json.NewDecoder(r.Body).Decode(&sent)
		fmt.Fprint(w, message("end_turn", &model.Usage{InputTokens: 1, OutputTokens: 1}, "hi"))
	}))
	defer srv.Close()
	temp := 1.0
	r := request()
	r.Model, r.Temperature = claude4[0], &temp
	if _, err := clientAt(t, srv.URL, false).Generate(context.Background(), r); err != nil {
		t.Fatal(err)
	}
	if _, ok := sent["top_p"]; ok || sent["temperature"] != 1.0 {
		t.Fatalf("sent %v: want temperature and no top_p", sent)
	}

	fake := httptest.NewServer((&anthropictest.Server{}).Handler())
	defer fake.Close()
	for model, want := range map[string]int{claude4[0]: 400, claude4[1]: 400, claude4[2]: 400, "claude-3-5-haiku-20241022": 200} {
		body := fmt.Sprintf(`{"model":%q,"max_tokens":8,"temperature":0.5,"top_p":0.9,"messages":[{"role":"user","content":"hi"}]}`, model)
		resp, err := http.Post(fake.URL+"/v1/messages", "application/json", bytes.NewBufferString(body))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Fatalf("%s: status %d (%s), want %d", model, resp.StatusCode, b, want)
		}
		if want == 400 && !bytes.Contains(b, []byte("cannot both be specified")) {
			t.Fatalf("%s: body %s", model, b)
		}
	}
	// The client classifies that refusal as a request no retry mends:
	// TestErrorBodies' 400_temperature_top_p.json.
}

// Claude Opus 4.7 and later refuse any temperature, 1 included; earlier
// models and a call without one are answered.
func TestTheFakeRefusesAnyTemperatureOnOpus47(t *testing.T) {
	fake := httptest.NewServer((&anthropictest.Server{}).Handler())
	defer fake.Close()
	for _, c := range []struct {
		model, temp string
		want        int
	}{
		{"claude-opus-4-7", `,"temperature":1`, 400},
		{"claude-opus-4-8-20260601", `,"temperature":0.2`, 400},
		{"claude-opus-4-7", ``, 200},
		{"claude-opus-4-6", `,"temperature":0.2`, 200},
	} {
		body := fmt.Sprintf(`{"model":%q,"max_tokens":8%s,"messages":[{"role":"user","content":"hi"}]}`, c.model, c.temp)
		resp, err := http.Post(fake.URL+"/v1/messages", "application/json", bytes.NewBufferString(body))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != c.want || c.want == 400 && !bytes.Contains(b, []byte("deprecated for this model")) {
			t.Errorf("%s%s: status %d (%s), want %d", c.model, c.temp, resp.StatusCode, b, c.want)
		}
	}
}
