package config_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/aijobs/aijobs/pkg/config"
)

// Each rung reads the content parts its model reads (docs/providers.md,
// "Content parts"): a model nobody described reads neither images nor
// documents.
func TestARungReadsThePartsItsModelReads(t *testing.T) {
	cases := []struct {
		provider, model   string
		images, documents bool
	}{
		{"oa", "gpt-4o-mini", true, true},
		{"oa", "gpt-4.1", true, true},
		{"oa", "gpt-5-mini", true, true},
		{"oa", "o4-mini", true, true},
		{"oa", "o3-mini", false, false},
		{"oa", "gpt-3.5-turbo", false, false},
		{"oa", "llama3.2", false, false},
		{"an", "claude-sonnet-4-5", true, true},
		{"an", "claude-3-5-haiku-20241022", true, true},
		{"an", "claude-3-haiku-20240307", true, false},
		{"br", "us.anthropic.claude-haiku-4-5-20251001-v1:0", true, true},
		{"br", "amazon.nova-pro-v1:0", true, true},
		{"br", "amazon.nova-micro-v1:0", false, false},
		{"br", "meta.llama3-1-70b-instruct-v1:0", false, false},
		{"fk", "fake", true, true},
	}
	var rungs []string
	for _, c := range cases {
		rungs = append(rungs, fmt.Sprintf(`{"provider":%q,"model":%q,"price":{"input":1,"output":1},"timeout":"10s"}`, c.provider, c.model))
	}
	doc := `{"providers":{"oa":{"kind":"openai","base_url":"http://x"},"an":{"kind":"anthropic"},"br":{"kind":"bedrock"},"fk":{"kind":"fake"}},
	  "routes":{"default":{"rungs":[` + strings.Join(rungs, ",") + `],"fallback_on":["timeout"]}}}`
	c, err := config.Load(env(map[string]string{"AIJOBS_ROUTES": doc}))
	if err != nil {
		t.Fatal(err)
	}
	for i, g := range c.Routes["default"].Rungs {
		if want := cases[i]; g.Takes.Images != want.images || g.Takes.Documents != want.documents {
			t.Errorf("%s/%s: images %v, documents %v; want %v, %v", g.Provider, g.Model, g.Takes.Images, g.Takes.Documents, want.images, want.documents)
		}
	}
}
