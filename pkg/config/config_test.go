package config_test

import (
	"flag"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/aijobs/aijobs/pkg/config"
	"github.com/aijobs/aijobs/pkg/job"
)

func env(kv map[string]string) func(string) string { return func(k string) string { return kv[k] } }

func TestDefaults(t *testing.T) {
	c, err := config.Load(env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if c.Shortcut.Kind != "fake" || c.Table != "aijobs-jobs" || c.Listen != "127.0.0.1:8080" || c.Region != "us-east-1" || c.Metrics != "emf" {
		t.Fatalf("defaults: %+v", c)
	}
	if c.Shortcut.Price.InputPerToken != 15000 || c.Shortcut.Price.OutputPerToken != 60000 {
		t.Fatalf("default price %+v, want 15 and 60 cents per million = 15000 and 60000 nanocents per token", c.Shortcut.Price)
	}
	if c.Shortcut.Timeout != 120*time.Second || c.Settings.RouteTimeout != c.Shortcut.Timeout || !c.Shortcut.Stream {
		t.Fatalf("provider: %+v", c.Shortcut)
	}
}

func TestOpenAIBaseURLSwitchesTheDefaultRoute(t *testing.T) {
	c, err := config.Load(env(map[string]string{"OPENAI_BASE_URL": "http://127.0.0.1:11434/v1", "OPENAI_API_KEY": "sk-secret"}))
	if err != nil {
		t.Fatal(err)
	}
	if c.Shortcut.Kind != "openai" || c.Shortcut.BaseURL != "http://127.0.0.1:11434/v1" || c.Shortcut.APIKey != "sk-secret" {
		t.Fatalf("provider: %+v", c.Shortcut)
	}
	if _, err := config.Load(env(map[string]string{"AIJOBS_MODEL_PROVIDER": "openai"})); err == nil {
		t.Fatal("openai without a base URL must be refused")
	}
}

func TestOverridesAndRefusals(t *testing.T) {
	c, err := config.Load(env(map[string]string{
		"AIJOBS_PREFIX": "p", "AIJOBS_HEARTBEAT": "1s", "AIJOBS_LEASE_TTL": "3s", "AIJOBS_MAX_BUDGET_CENTS": "12.5", "AIJOBS_DEFAULT_BUDGET_CENTS": "10",
		"AIJOBS_BATCH_SIZE": "10", "AIJOBS_PRICE_OUTPUT": "7.5",
	}))
	if err != nil {
		t.Fatal(err)
	}
	if c.Table != "p-jobs" || c.Settings.Heartbeat != time.Second || c.Settings.Limits.MaxBudget != job.Cents(12)+job.NanosPerCent/2 ||
		c.Settings.BatchSize != 10 || c.Shortcut.Price.OutputPerToken != 7500 {
		t.Fatalf("overrides: %+v", c)
	}
	for name, kv := range map[string]map[string]string{
		"bad duration":      {"AIJOBS_HEARTBEAT": "often"},
		"bad number":        {"AIJOBS_BATCH_SIZE": "ten"},
		"batch too big":     {"AIJOBS_BATCH_SIZE": "11"},
		"timing rule":       {"AIJOBS_VISIBILITY_TIMEOUT": "10s"},
		"bad provider":      {"AIJOBS_MODEL_PROVIDER": "magic"},
		"price precision":   {"AIJOBS_PRICE_INPUT": "0.0001"},
		"bad metrics":       {"AIJOBS_METRICS": "statsd"},
		"bad bool":          {"AIJOBS_OPENAI_STREAM": "maybe"},
		"negative duration": {"AIJOBS_LEASE_TTL": "-1s"},
	} {
		if _, err := config.Load(env(kv)); err == nil {
			t.Errorf("%s: accepted %v", name, kv)
		}
	}
}

func TestSecretsNeverInErrors(t *testing.T) {
	_, err := config.Load(env(map[string]string{"OPENAI_API_KEY": "sk-live-123", "AIJOBS_HEARTBEAT": "x"}))
	if err == nil || strings.Contains(err.Error(), "sk-live-123") {
		t.Fatalf("err = %v", err)
	}
}

var updateTable = flag.Bool("update-table", false, "rewrite docs/configuration.md's configuration table")

// TestTheConfigurationDocListsEveryVariable keeps docs/configuration.md's
// table equal to vars.go. Regenerate it with:
// go test ./pkg/config -run ConfigurationDoc -update-table
func TestTheConfigurationDocListsEveryVariable(t *testing.T) {
	const path, begin, end = "../../docs/configuration.md", "<!-- config-table -->\n", "<!-- /config-table -->"
	doc, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s := string(doc)
	i, j := strings.Index(s, begin), strings.Index(s, end)
	if i < 0 || j < i {
		t.Fatalf("docs/configuration.md lacks the %q ... %q markers", begin, end)
	}
	want := s[:i+len(begin)] + config.Markdown() + s[j:]
	if *updateTable {
		if err := os.WriteFile(path, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if want != s {
		t.Fatal("docs/configuration.md's configuration table is out of date: go test ./pkg/config -run ConfigurationDoc -update-table")
	}
}

func TestPriceTable(t *testing.T) {
	c, err := config.Load(env(map[string]string{"OPENAI_BASE_URL": "http://x/v1", "AIJOBS_OPENAI_MODEL": "big",
		"AIJOBS_PRICES": "small=15:60, big=250:1000"}))
	if err != nil {
		t.Fatal(err)
	}
	if c.Shortcut.Price.InputPerToken != 250_000 || c.Shortcut.Price.OutputPerToken != 1_000_000 || len(c.Shortcut.Prices) != 2 {
		t.Fatalf("the route's model must be priced from the table: %+v", c.Shortcut)
	}
	for _, bad := range []string{"small", "small=15", "=1:2", "small=a:b", "small=0.0001:1"} {
		if _, err := config.Load(env(map[string]string{"AIJOBS_PRICES": bad})); err == nil {
			t.Errorf("AIJOBS_PRICES=%q accepted", bad)
		}
	}
}
