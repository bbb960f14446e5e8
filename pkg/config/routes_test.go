package config_test

import (
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/aijobs/aijobs/pkg/config"
	"github.com/aijobs/aijobs/pkg/job"
)

func price(t *testing.T, in, out string) job.Price {
	t.Helper()
	p, err := job.PricePerMillion(in, out)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// cachedAt is p with its prompt-cache rates, cents per million tokens.
func cachedAt(t *testing.T, p job.Price, read, write string) job.Price {
	t.Helper()
	p.CachedInputPerToken, p.CacheWritePerToken = price(t, read, write).InputPerToken, price(t, write, read).InputPerToken
	return p
}

// TestRoutesExample loads docs/routes.md's example routes file, so the
// documented configuration is one that actually starts.
func TestRoutesExample(t *testing.T) {
	doc, err := os.ReadFile("testdata/routes.json")
	if err != nil {
		t.Fatal(err)
	}
	c, err := config.Load(env(map[string]string{"AIJOBS_ROUTES": string(doc), "OPENAI_API_KEY": "sk-openai"}))
	if err != nil {
		t.Fatal(err)
	}
	wantProviders := map[string]config.ProviderSpec{
		"anthropic": {Kind: "anthropic", BaseURL: "https://api.anthropic.com", APIKeySecret: "arn:aws:secretsmanager:eu-west-1:123456789012:secret:aijobs/anthropic-AbCdEf", Stream: true},
		"bedrock":   {Kind: "bedrock", Region: "us-east-1", Stream: true},
		"openai":    {Kind: "openai", BaseURL: "https://api.openai.com/v1", APIKey: "sk-openai", Stream: true},
		"ollama":    {Kind: "openai", BaseURL: "http://127.0.0.1:11434/v1", Stream: false, MaxTokensField: config.MaxTokens},
	}
	if !reflect.DeepEqual(c.Providers, wantProviders) {
		t.Errorf("providers:\n got %+v\nwant %+v", c.Providers, wantProviders)
	}
	retryable := []job.ErrorClass{job.RateLimited, job.Overloaded, job.ProviderError, job.Timeout, job.Network}
	perModel := job.RateLimit{Grain: job.GrainModel} // every keyed entry has a bucket; OpenAI's per model
	claude := job.Takes{TopP: true, Stop: true, Budget: true, TemperatureOrTopP: true, ReasoningTopP: 0.95, ResponseFormat: true, ForcedTool: true, Images: true, Documents: true}
	chat := job.Takes{TopP: true, Stop: true, Seed: true, ResponseFormat: true, Images: true, Documents: true}
	text := job.Takes{TopP: true, Stop: true, Seed: true, ResponseFormat: true} // llama3.2 on ollama reads no images or documents
	wantRoutes := map[string]job.Route{
		"default": {Rungs: []job.Rung{
			{Provider: "anthropic", Model: "claude-sonnet-4-5", Price: cachedAt(t, price(t, "300", "1500"), "30", "375"), MaxTokens: 4096, Timeout: 60 * time.Second,
				Limit: job.RateLimit{RequestsPerMinute: 4000, TokensPerMinute: 2_000_000, Grain: job.GrainEntry}, Takes: claude},
			{Provider: "bedrock", Model: "us.anthropic.claude-sonnet-4-5-20250929-v1:0", Price: cachedAt(t, price(t, "300", "1500"), "30", "375"), MaxTokens: 4096, Timeout: 60 * time.Second,
				Limit: job.RateLimit{Grain: job.GrainEntry, Throttles: true}, Takes: claude},
			{Provider: "openai", Model: "gpt-4o", Price: cachedAt(t, price(t, "250", "1000"), "125", "250"), Timeout: 40 * time.Second, Limit: perModel, Takes: chat},
		}, FallbackOn: retryable},
		"cheap": {Rungs: []job.Rung{
			{Provider: "openai", Model: "gpt-4o-mini", Price: cachedAt(t, price(t, "15", "60"), "7.5", "15"), Timeout: 30 * time.Second, Completion: 10 * time.Second, Limit: perModel, Takes: chat,
				Lanes: []job.Rung{{Provider: "openai", Model: "gpt-4o-mini", Price: cachedAt(t, price(t, "7.5", "30"), "3.75", "7.5"), Timeout: 120 * time.Second,
					Completion: time.Minute, Lane: job.Flex, Base: cachedAt(t, price(t, "15", "60"), "7.5", "15"), Limit: perModel, Takes: chat}}},
		}},
		"local": {Rungs: []job.Rung{
			{Provider: "ollama", Model: "llama3.2", Price: price(t, "0", "0"), Timeout: 90 * time.Second, Limit: perModel, Takes: text},
		}},
	}
	if !reflect.DeepEqual(c.Routes, wantRoutes) {
		t.Errorf("routes:\n got %+v\nwant %+v", c.Routes, wantRoutes)
	}
	if want := []string{"cheap", "default", "local"}; !reflect.DeepEqual(c.Settings.Limits.Models, want) {
		t.Errorf("models a caller may name: %v, want %v", c.Settings.Limits.Models, want)
	}
	if c.Settings.RouteTimeout != 160*time.Second {
		t.Errorf("route timeout %s, want the longest route's 60+60+40 = 160s", c.Settings.RouteTimeout)
	}
}

// An openai entry in background mode keeps its generations by id, and is
// polled, not streamed.
func TestABackgroundProviderIsNotStreamed(t *testing.T) {
	doc := `{"providers":{"oa":{"kind":"openai","base_url":"https://api.openai.com/v1","background":true,"poll_every":"250ms"}},"routes":{"default":{"rungs":[{"provider":"oa","model":"gpt","price":{"input":1,"output":2}}]}}}`
	c, err := config.Load(env(map[string]string{"AIJOBS_ROUTES": doc}))
	if err != nil {
		t.Fatal(err)
	}
	if p := c.Providers["oa"]; !p.Background || p.Stream || p.PollEvery != 250*time.Millisecond {
		t.Fatalf("provider %+v, want background and not streamed", p)
	}
}

// A rung on a background entry may run detached; its timeout (a
// generation may run for ten minutes) is not a worker's wait, so it
// counts toward the route's timeout only as the call that starts it.
func TestADetachedRungOnABackgroundProvider(t *testing.T) {
	doc := `{"providers":{"oa":{"kind":"openai","base_url":"https://api.openai.com/v1","background":true}},"routes":{"default":{"rungs":[{"provider":"oa","model":"gpt","price":{"input":1,"output":2},"timeout":"10m","detached":true}]}}}`
	c, err := config.Load(env(map[string]string{"AIJOBS_ROUTES": doc}))
	if err != nil {
		t.Fatal(err)
	}
	r := c.Routes["default"]
	if !r.Rungs[0].Detached || r.Rungs[0].Timeout != 10*time.Minute || r.Timeout() != job.DetachedStart {
		t.Fatalf("rung %+v, route timeout %s: want detached, 10m, counted as %s", r.Rungs[0], r.Timeout(), job.DetachedStart)
	}
}

// A rung's lanes are copies of it at their own price, timeout and p99,
// each measured against the rung's own (standard) price; their timeouts
// count toward the route's.
func TestARungOffersLanes(t *testing.T) {
	doc := `{"providers":{"oa":{"kind":"openai","base_url":"https://api.openai.com/v1"}},"routes":{"default":{"rungs":[
		{"provider":"oa","model":"gpt","price":{"input":100,"output":400},"timeout":"30s","p99":"10s","max_tokens":500,
		 "lanes":{"flex":{"price":{"input":50,"output":200},"timeout":"60s","p99":"45s"},"priority":{"price":{"input":175,"output":700}}}}]}}}`
	c, err := config.Load(env(map[string]string{"AIJOBS_ROUTES": doc}))
	if err != nil {
		t.Fatal(err)
	}
	g := c.Routes["default"].Rungs[0]
	std := job.Rung{Provider: "oa", Model: "gpt", Price: price(t, "100", "400"), MaxTokens: 500, Timeout: 30 * time.Second, Completion: 10 * time.Second,
		Limit: job.RateLimit{Grain: job.GrainModel}, Takes: job.Takes{TopP: true, Stop: true, Seed: true, ResponseFormat: true}}
	flex := std
	flex.Lane, flex.Base, flex.Price, flex.Timeout, flex.Completion = job.Flex, std.Price, price(t, "50", "200"), time.Minute, 45*time.Second
	prio := std
	prio.Lane, prio.Base, prio.Price, prio.Completion = job.Priority, std.Price, price(t, "175", "700"), 0
	want := std
	want.Lanes = []job.Rung{flex, prio}
	if !reflect.DeepEqual(g, want) {
		t.Fatalf("rung\n%+v\nwant\n%+v", g, want)
	}
	if g.Lanes[1].P99() != 30*time.Second {
		t.Errorf("priority p99 %s, want its timeout", g.Lanes[1].P99())
	}
	if c.Settings.RouteTimeout != 2*time.Minute {
		t.Errorf("route timeout %s, want 30s + 60s + 30s", c.Settings.RouteTimeout)
	}
}

// An OpenAI, Anthropic or Bedrock rung may offer a batch lane; its
// batches default to the most the provider's batch holds (750, 950), or
// 1,000, and to at least Bedrock's minimum of 100.
func TestAProvidersRungOffersABatchLane(t *testing.T) {
	for kind, most := range map[string]int{"openai": 750, "anthropic": 950, "bedrock": 1000} {
		where := `"base_url":"https://example.com/v1"`
		if kind == "bedrock" {
			where = `"region":"us-east-1"`
		}
		doc := `{"providers":{"p":{"kind":"` + kind + `",` + where + `}},"routes":{"default":{"rungs":[
		{"provider":"p","model":"m","price":{"input":100,"output":400},"lanes":{"batch":{"price":{"input":50,"output":200},"p99":"6h"}}}]}}}`
		c, err := config.Load(env(map[string]string{"AIJOBS_ROUTES": doc, "AIJOBS_BATCH_ROLE_ARN": "arn:aws:iam::1:role/batch"}))
		if err != nil {
			t.Fatal(kind, err)
		}
		if kind == "bedrock" {
			// Its batches need the bucket's role.
			if _, err := config.Load(env(map[string]string{"AIJOBS_ROUTES": doc})); err == nil || !strings.Contains(err.Error(), "AIJOBS_BATCH_ROLE_ARN") {
				t.Errorf("a bedrock batch lane without its role: %v", err)
			}
		}
		b, ok := c.Routes["default"].Rungs[0].InLane(job.Batch)
		fewest := 1
		if kind == "bedrock" {
			fewest = 100 // its quota
		}
		if !ok || b.MaxJobs != most || b.MinJobs != fewest || b.Window != time.Minute || b.P99() != 6*time.Hour || b.Timeout != 0 {
			t.Errorf("%s: batch lane %+v (offered %v)", kind, b, ok)
		}
	}
}

func TestShortcutIsOneDefaultRoute(t *testing.T) {
	c, err := config.Load(env(map[string]string{"OPENAI_BASE_URL": "http://x/v1", "OPENAI_API_KEY": "sk-1", "AIJOBS_OPENAI_MODEL": "m", "AIJOBS_MODEL_TIMEOUT": "30s"}))
	if err != nil {
		t.Fatal(err)
	}
	// An OpenAI key has its bucket per model, its limits learned.
	want := map[string]job.Route{"default": {Rungs: []job.Rung{{Provider: "default", Model: "m", Price: c.Shortcut.Price, Timeout: 30 * time.Second,
		Limit: job.RateLimit{Grain: job.GrainModel}, Takes: job.Takes{TopP: true, Stop: true, Seed: true, ResponseFormat: true}}}}}
	if !reflect.DeepEqual(c.Routes, want) || c.Providers["default"].APIKey != "sk-1" || c.Providers["default"].Kind != "openai" {
		t.Fatalf("routes %+v providers %+v", c.Routes, c.Providers)
	}
	if c.Settings.RouteTimeout != 30*time.Second || len(c.Settings.Limits.Models) != 1 {
		t.Fatalf("settings: %s %v", c.Settings.RouteTimeout, c.Settings.Limits.Models)
	}
}

func TestRoutesRefused(t *testing.T) {
	const fakeP = `"providers":{"f":{"kind":"fake"}}`
	rung := `{"provider":"f","price":{"input":1,"output":2}}`
	tests := []struct {
		name, doc, want string
	}{
		{"not JSON", `{`, "not the routes document"},
		{"unknown field", `{` + fakeP + `,"routes":{"default":{"rungs":[` + rung + `],"fallback":["timeout"]}}}`, "unknown field"},
		{"trailing data", `{` + fakeP + `,"routes":{"default":{"rungs":[` + rung + `]}}} {}`, "trailing data"},
		{"no routes", `{` + fakeP + `}`, "no routes"},
		{"no default route", `{` + fakeP + `,"routes":{"other":{"rungs":[` + rung + `]}}}`, `no "default" route`},
		{"no rungs", `{` + fakeP + `,"routes":{"default":{"rungs":[]}}}`, "no rungs"},
		{"unknown provider", `{` + fakeP + `,"routes":{"default":{"rungs":[{"provider":"g","price":{"input":1,"output":2}}]}}}`, `provider "g" is not in the provider table`},
		{"unused provider", `{"providers":{"f":{"kind":"fake"},"g":{"kind":"fake"}},"routes":{"default":{"rungs":[` + rung + `]}}}`, `provider "g": no rung uses it`},
		{"unknown kind", `{"providers":{"f":{"kind":"magic"}},"routes":{"default":{"rungs":[` + rung + `]}}}`, `kind "magic"`},
		{"openai without base_url", `{"providers":{"f":{"kind":"openai"}},"routes":{"default":{"rungs":[{"provider":"f","model":"m","price":{"input":1,"output":2}}]}}}`, "needs base_url"},
		{"no model", `{"providers":{"f":{"kind":"openai","base_url":"http://x"}},"routes":{"default":{"rungs":[{"provider":"f","price":{"input":1,"output":2}}]}}}`, "no model"},
		{"no price", `{` + fakeP + `,"routes":{"default":{"rungs":[{"provider":"f"}]}}}`, "price needs input and output"},
		{"price too precise", `{` + fakeP + `,"routes":{"default":{"rungs":[{"provider":"f","price":{"input":"0.0001","output":2}}]}}}`, "at most 3 decimals"},
		{"negative price", `{` + fakeP + `,"routes":{"default":{"rungs":[{"provider":"f","price":{"input":-1,"output":2}}]}}}`, "price"},
		{"bad timeout", `{` + fakeP + `,"routes":{"default":{"rungs":[{"provider":"f","price":{"input":1,"output":2},"timeout":"soon"}]}}}`, "timeout"},
		{"zero timeout", `{` + fakeP + `,"routes":{"default":{"rungs":[{"provider":"f","price":{"input":1,"output":2},"timeout":"0s"}]}}}`, "timeout"},
		{"negative max tokens", `{` + fakeP + `,"routes":{"default":{"rungs":[{"provider":"f","price":{"input":1,"output":2},"max_tokens":-1}]}}}`, "max_tokens"},
		{"fallback on an unknown class", `{` + fakeP + `,"routes":{"default":{"rungs":[` + rung + `],"fallback_on":["oops"]}}}`, `fallback_on "oops"`},
		{"fallback on the job's own limit", `{` + fakeP + `,"routes":{"default":{"rungs":[` + rung + `],"fallback_on":["budget_exhausted"]}}}`, `fallback_on "budget_exhausted"`},
		{"fallback class twice", `{` + fakeP + `,"routes":{"default":{"rungs":[` + rung + `],"fallback_on":["timeout","timeout"]}}}`, "twice"},
		{"rungs that can never run", `{` + fakeP + `,"routes":{"default":{"rungs":[` + rung + `,` + rung + `]}}}`, "no fallback_on"},
		{"bedrock with a key", `{"providers":{"f":{"kind":"bedrock","api_key_env":"K"}},"routes":{"default":{"rungs":[{"provider":"f","model":"m","price":{"input":1,"output":2}}]}}}`, "no api key"},
		{"key from an empty variable", `{"providers":{"f":{"kind":"anthropic","api_key_env":"EMPTY"}},"routes":{"default":{"rungs":[{"provider":"f","model":"m","price":{"input":1,"output":2}}]}}}`, "EMPTY, which is empty"},
		{"two kinds of key", `{"providers":{"f":{"kind":"anthropic","api_key_env":"K","api_key_secret":"s"}},"routes":{"default":{"rungs":[{"provider":"f","model":"m","price":{"input":1,"output":2}}]}}}`, "exclusive"},
		{"region off bedrock", `{"providers":{"f":{"kind":"anthropic","region":"us-east-1"}},"routes":{"default":{"rungs":[{"provider":"f","model":"m","price":{"input":1,"output":2}}]}}}`, "region and endpoint are for bedrock"},
		{"a provider name with a hash", `{"providers":{"f#1":{"kind":"fake"}},"routes":{"default":{"rungs":[{"provider":"f#1","price":{"input":1,"output":2}}]}}}`, "may not hold"},
		{"limits that limit nothing", `{"providers":{"f":{"kind":"fake","limits":{}}},"routes":{"default":{"rungs":[` + rung + `]}}}`, "limits"},
		{"negative limits", `{"providers":{"f":{"kind":"fake","limits":{"requests_per_minute":-1,"tokens_per_minute":5}}},"routes":{"default":{"rungs":[` + rung + `]}}}`, "limits"},
		{"limits misspelt", `{"providers":{"f":{"kind":"fake","limits":{"rpm":5}}},"routes":{"default":{"rungs":[` + rung + `]}}}`, "rpm"},
		{"background off openai", `{"providers":{"f":{"kind":"anthropic","background":true}},"routes":{"default":{"rungs":[{"provider":"f","model":"m","price":{"input":1,"output":2}}]}}}`, "background is for openai"},
		{"poll_every without background", `{"providers":{"f":{"kind":"openai","base_url":"http://x","poll_every":"1s"}},"routes":{"default":{"rungs":[{"provider":"f","model":"m","price":{"input":1,"output":2}}]}}}`, "poll_every"},
		{"detached on a provider that keeps nothing", `{"providers":{"f":{"kind":"openai","base_url":"http://x"}},"routes":{"default":{"rungs":[{"provider":"f","model":"m","price":{"input":1,"output":2},"detached":true}]}}}`, "keeps generations by id"},
		{"detached on the fake", `{` + fakeP + `,"routes":{"default":{"rungs":[{"provider":"f","price":{"input":1,"output":2},"detached":true}]}}}`, "keeps generations by id"},
		{"background streamed", `{"providers":{"f":{"kind":"openai","base_url":"http://x","background":true,"stream":true}},"routes":{"default":{"rungs":[{"provider":"f","model":"m","price":{"input":1,"output":2}}]}}}`, "exclusive"},
		{"a lane named standard", `{` + fakeP + `,"routes":{"default":{"rungs":[{"provider":"f","price":{"input":1,"output":2},"lanes":{"standard":{"price":{"input":1,"output":2}}}}]}}}`, "standard lane"},
		{"an unknown lane", `{` + fakeP + `,"routes":{"default":{"rungs":[{"provider":"f","price":{"input":1,"output":2},"lanes":{"turbo":{"price":{"input":1,"output":2}}}}]}}}`, "want batch, flex or priority"},
		{"openai batches over its file's limit", `{"providers":{"f":{"kind":"openai","base_url":"http://x"}},"routes":{"default":{"rungs":[{"provider":"f","model":"m","price":{"input":1,"output":2},"lanes":{"batch":{"price":{"input":1,"output":2},"p99":"1h","max_jobs":751}}}]}}}`, "want 1 to 750"},
		{"a batch of fewer than it must hold", `{"providers":{"f":{"kind":"bedrock","region":"us-east-1"}},"routes":{"default":{"rungs":[{"provider":"f","model":"m","price":{"input":1,"output":2},"lanes":{"batch":{"price":{"input":1,"output":2},"p99":"1h","min_jobs":200,"max_jobs":100}}}]}}}`, "min_jobs 200"},
		{"a batch lane without a p99", `{` + fakeP + `,"routes":{"default":{"rungs":[{"provider":"f","price":{"input":1,"output":2},"lanes":{"batch":{"price":{"input":1,"output":2}}}}]}}}`, "p99"},
		{"a window off the batch lane", `{` + fakeP + `,"routes":{"default":{"rungs":[{"provider":"f","price":{"input":1,"output":2},"lanes":{"flex":{"price":{"input":1,"output":2},"window":"1m"}}}]}}}`, "window"},
		{"min_jobs off the batch lane", `{` + fakeP + `,"routes":{"default":{"rungs":[{"provider":"f","price":{"input":1,"output":2},"lanes":{"flex":{"price":{"input":1,"output":2},"min_jobs":5}}}]}}}`, "min_jobs"},
		{"a lane without a price", `{` + fakeP + `,"routes":{"default":{"rungs":[{"provider":"f","price":{"input":1,"output":2},"lanes":{"flex":{"timeout":"5s"}}}]}}}`, "price needs"},
		{"a p99 above the timeout", `{` + fakeP + `,"routes":{"default":{"rungs":[{"provider":"f","price":{"input":1,"output":2},"timeout":"5s","p99":"6s"}]}}}`, "above the timeout"},
		{"a lane's p99 above its timeout", `{` + fakeP + `,"routes":{"default":{"rungs":[{"provider":"f","price":{"input":1,"output":2},"lanes":{"flex":{"price":{"input":1,"output":2},"timeout":"5s","p99":"9s"}}}]}}}`, "above the timeout"},
		{"anthropic lanes", `{"providers":{"f":{"kind":"anthropic"}},"routes":{"default":{"rungs":[{"provider":"f","model":"m","price":{"input":1,"output":2},"lanes":{"flex":{"price":{"input":1,"output":2}}}}]}}}`, "no service tiers"},
		{"route too long for the worker", `{` + fakeP + `,"routes":{"default":{"rungs":[{"provider":"f","price":{"input":1,"output":2},"timeout":"100s"},{"provider":"f","price":{"input":1,"output":2},"timeout":"100s"}],"fallback_on":["timeout"]}}}`, "worker timeout"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := config.Load(env(map[string]string{"AIJOBS_ROUTES": tt.doc, "K": "sk-secret-value"}))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want one mentioning %q", err, tt.want)
			}
			if strings.Contains(err.Error(), "sk-secret-value") {
				t.Fatalf("err leaks a key: %v", err)
			}
		})
	}
}

func TestRoutePriceAsStringOrNumber(t *testing.T) {
	for _, p := range []string{`{"input":"7.5","output":"30"}`, `{"input":7.5,"output":30}`} {
		c, err := config.Load(env(map[string]string{"AIJOBS_ROUTES": `{"providers":{"f":{"kind":"fake","latency":"5ms"}},"routes":{"default":{"rungs":[{"provider":"f","price":` + p + `}]}}}`}))
		if err != nil {
			t.Fatal(err)
		}
		// A fake rung's cache is priced as the fake bills it (fake.Rates).
		if got := c.Routes["default"].Rungs[0].Price; got != cachedAt(t, price(t, "7.5", "30"), "3.75", "9.375") {
			t.Errorf("%s: price %+v", p, got)
		}
		if c.Providers["f"].Latency != 5*time.Millisecond {
			t.Errorf("fake latency %s", c.Providers["f"].Latency)
		}
	}
}

// TestProviderLimitsReachEveryRung: a provider entry's limits are the
// limit of every rung that names it (one bucket per key), and a provider
// without limits leaves its rungs unlimited.
func TestProviderLimitsReachEveryRung(t *testing.T) {
	doc := `{"providers":{"k":{"kind":"fake","limits":{"requests_per_minute":500,"tokens_per_minute":90000}},"free":{"kind":"fake"}},
	  "routes":{"default":{"rungs":[{"provider":"k","price":{"input":1,"output":2},"timeout":"10s"},{"provider":"free","price":{"input":1,"output":2},"timeout":"10s"}],"fallback_on":["rate_limited"]},
	            "b":{"rungs":[{"provider":"k","price":{"input":1,"output":2}}]}}}`
	c, err := config.Load(env(map[string]string{"AIJOBS_ROUTES": doc}))
	if err != nil {
		t.Fatal(err)
	}
	want := job.RateLimit{RequestsPerMinute: 500, TokensPerMinute: 90000}
	if a, b := c.Routes["default"].Rungs, c.Routes["b"].Rungs; a[0].Limit != want || b[0].Limit != want || !a[1].Limit.IsZero() {
		t.Fatalf("limits %+v %+v %+v", a[0].Limit, b[0].Limit, a[1].Limit)
	}
}

// TestTenantInFlight: a default and per-tenant overrides, 0 lifting the
// limit for one tenant; malformed entries, and limits past what one item
// of the buckets table holds, are refused at start; AIJOBS_TENANT_QUEUED
// reads the same way.
func TestTenantInFlight(t *testing.T) {
	c, err := config.Load(env(map[string]string{"AIJOBS_TENANT_IN_FLIGHT": "8, tenant-a=2 ,tenant-b=0"}))
	if err != nil {
		t.Fatal(err)
	}
	if c.InFlight.For("tenant-a") != 2 || c.InFlight.For("tenant-b") != 0 || c.InFlight.For("anyone") != 8 || !c.SharedLimits() {
		t.Fatalf("in flight %+v", c.InFlight)
	}
	if c, _ := config.Load(env(nil)); c.InFlight.Any() || c.SharedLimits() {
		t.Fatalf("no limit configured, yet %+v", c.InFlight)
	}
	for _, bad := range []string{"-1", "8,9", "x", "=3", "tenant-a=many", "5001", "1,tenant-a=9999"} {
		for _, name := range []string{"AIJOBS_TENANT_IN_FLIGHT", "AIJOBS_TENANT_QUEUED"} {
			if _, err := config.Load(env(map[string]string{name: bad})); err == nil || !strings.Contains(err.Error(), name) {
				t.Errorf("%s=%q: err %v", name, bad, err)
			}
		}
	}
	c, err = config.Load(env(map[string]string{"AIJOBS_TENANT_QUEUED": "1000,jwt:tenant-a=50"}))
	if err != nil || c.Queued.For("jwt:tenant-a") != 50 || c.Queued.For("anyone") != 1000 || c.InFlight.Any() || !c.SharedLimits() {
		t.Fatalf("queued %+v, in flight %+v, %v", c.Queued, c.InFlight, err)
	}
}

// TestABedrockBatchLaneBelowItsMinimumIsRefused: Bedrock refuses a batch
// inference job of fewer records than its quota (100 by default), so a
// bedrock batch lane whose min_jobs or max_jobs is below it would make
// batches Bedrock refuses, every one: refused at config, naming the
// quota. 100 itself is taken, and the other kinds still take one.
func TestABedrockBatchLaneBelowItsMinimumIsRefused(t *testing.T) {
	lane := func(kind, where, jobs string) string {
		return `{"providers":{"p":{"kind":"` + kind + `",` + where + `}},"routes":{"default":{"rungs":[{"provider":"p","model":"m",` +
			`"price":{"input":1,"output":2},"lanes":{"batch":{"price":{"input":1,"output":2},"p99":"24h"` + jobs + `}}}]}}}`
	}
	load := func(doc string) error {
		_, err := config.Load(env(map[string]string{"AIJOBS_ROUTES": doc, "AIJOBS_BATCH_ROLE_ARN": "arn:aws:iam::1:role/batch"}))
		return err
	}
	bedrock := `"region":"us-east-1"`
	for jobs, want := range map[string]string{
		`,"min_jobs":10`:                "min_jobs 10: want 100 to max_jobs (1000)",
		`,"min_jobs":99,"max_jobs":500`: "min_jobs 99",
		`,"max_jobs":50`:                "max_jobs 50: want 100 to 3800",
		`,"min_jobs":1,"max_jobs":1`:    "max_jobs 1",
	} {
		err := load(lane("bedrock", bedrock, jobs))
		if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "Minimum number of records per batch inference job") {
			t.Errorf("bedrock %s: err %v, want one mentioning %q and the quota", jobs, err, want)
		}
	}
	for _, ok := range []string{`,"min_jobs":100,"max_jobs":100`, `,"max_jobs":100`, ``} {
		if err := load(lane("bedrock", bedrock, ok)); err != nil {
			t.Errorf("bedrock %s: %v", ok, err)
		}
	}
	if err := load(lane("openai", `"base_url":"http://x"`, `,"min_jobs":1,"max_jobs":1`)); err != nil {
		t.Errorf("an openai batch of one: %v", err)
	}
}
