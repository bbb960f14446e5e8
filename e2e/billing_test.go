package e2e

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/aijobs/aijobs/pkg/job"
)

// usageOf reads a succeeded view's result usage as billed tokens.
func usageOf(t *testing.T, v map[string]any) job.Tokens {
	t.Helper()
	b, _ := json.Marshal(v["result"])
	var r struct {
		Usage struct {
			Input      int64 `json:"input_tokens"`
			Output     int64 `json:"output_tokens"`
			Cached     int64 `json:"cached_input_tokens"`
			CacheWrite int64 `json:"cache_write_tokens"`
			Reasoning  int64 `json:"reasoning_tokens"`
		} `json:"usage"`
	}
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatalf("result %s: %v", b, err)
	}
	u := r.Usage
	if u.Reasoning > u.Output {
		t.Fatalf("usage %+v: reasoning above output", u)
	}
	return job.Tokens{Input: u.Input, Output: u.Output, CachedInput: u.Cached, CacheWrite: u.CacheWrite}
}

// A generation whose prompt the provider partly read from its cache,
// partly wrote to it, and whose answer is partly reasoning, is on the
// record at exactly what the provider billed: the cached parts at their
// own rates (not the input price), reasoning as output. The view shows
// each part.
func TestACallIsOnTheRecordAsItsProviderBillsIt(t *testing.T) {
	t.Parallel()
	s := startStack(t, steadyLease)
	content := "[[fake:cached=24]] [[fake:cache_write=8]] [[fake:reasoning=6]] [[fake:tokens=20]] " +
		"a long system prompt the provider has seen before, cached on its side, then the question"
	id := s.submit("tenant-a", "cached-1", jobBody(content, ""))
	v := s.wait("tenant-a", id, 20*time.Second, "succeeded")
	used := usageOf(t, v)
	if used.CachedInput != 24 || used.CacheWrite != 8 || used.Output != 20 {
		t.Fatalf("usage on the record %+v, want 24 cached, 8 written, 20 output", used)
	}
	if got, want := num(v, "cost_cents"), s.fake.Billed(id).String(); got != want {
		t.Fatalf("cost_cents = %s, the provider billed %s", got, want)
	}
	price := s.app.Config.Routes["default"].Rungs[0].Price
	if full := price.Cost(used.Input, used.Output); full.String() == num(v, "cost_cents") {
		t.Fatalf("cost_cents %s is the usage at the full input price: the cache was not priced apart", full)
	}
}

// A call asked for in the priority lane that the provider served (and
// billed) at standard, as OpenAI's priority processing does past its
// ramp limit, is recorded at the standard price, in the standard lane,
// having saved nothing: no premium that was never paid.
func TestAPriorityCallServedAtStandardIsRecordedAtStandard(t *testing.T) {
	t.Parallel()
	routes := `{"providers": {"f": {"kind": "fake"}},
  "routes": {"default": {"rungs": [{"provider": "f", "price": {"input": "100", "output": "400"}, "timeout": "2s",
    "lanes": {"priority": {"price": {"input": "175", "output": "700"}, "timeout": "2s"}}}]}}}`
	overrides := map[string]string{"AIJOBS_ROUTES": routes}
	for k, v := range steadyLease {
		overrides[k] = v
	}
	s := startStack(t, overrides)
	rung := s.app.Config.Routes["default"].Rungs[0]
	for _, c := range []struct {
		key, directive string
		lane           job.Lane
		price          job.Price
	}{
		{"served-standard", "[[fake:served=standard]] ", job.Standard, rung.Price},
		{"served-priority", "", job.Priority, rung.Lanes[0].Price},
	} {
		id := s.submit("tenant-a", c.key, jobBody(c.directive+"answer me quickly", `"lanes": ["priority"]`))
		v := s.wait("tenant-a", id, 20*time.Second, "succeeded")
		used := usageOf(t, v)
		want := c.price.Bill(used)
		saved := rung.Price.Bill(used) - want
		if v["result_lane"] != string(c.lane) || num(v, "cost_cents") != want.String() || num(v, "saved_cents") != saved.String() {
			t.Errorf("%s: lane %v, cost %s, saved %s; want %s, %s, %s",
				c.key, v["result_lane"], num(v, "cost_cents"), num(v, "saved_cents"), c.lane, want, saved)
		}
	}
}
