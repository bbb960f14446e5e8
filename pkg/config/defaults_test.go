package config_test

import (
	"fmt"
	"reflect"
	"testing"

	"github.com/aijobs/aijobs/pkg/app"
	"github.com/aijobs/aijobs/pkg/config"
	"github.com/aijobs/aijobs/pkg/settings"
)

// The deployment's numbers are written once, in settings.Defaults(): a
// binary started with no variable set (config.Load applies each variable's
// default) must run with exactly those settings. A variable whose default
// text said another number would fail here; infra's tests check the same
// for the CDK stack and the functions' environments.
func TestLoadWithNoVariablesGivesSettingsDefaults(t *testing.T) {
	c, err := config.Load(env(nil))
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range diff(c.Settings, settings.Defaults()) {
		t.Errorf("config.Load with no variables set: %s", d)
	}
}

// The dev server (cmd/aijobs-dev: config.Load, app.New, DevServer) runs its
// gateway, event source mapping and reconciler schedule with the same
// numbers. `make dev` sets only the endpoint, the region and the metrics.
func TestDevServerRunsSettingsDefaults(t *testing.T) {
	cfg, err := config.Load(env(map[string]string{
		"AWS_ENDPOINT_URL": "http://127.0.0.1:1", "AWS_REGION": "us-east-1", "AIJOBS_METRICS": "off",
		"AIJOBS_QUEUE_URL": "http://127.0.0.1:1/000000000000/aijobs-jobs", // CreateResources finds it in make dev
		// The notifier reads its signing secret when wired, and there is no
		// AWS here: its numbers are checked by pkg/devserver's tests.
		"AIJOBS_CALLBACKS": "false",
	}))
	if err != nil {
		t.Fatal(err)
	}
	a, err := app.New(t.Context(), cfg, app.Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := settings.Defaults()
	for _, d := range diff(a.Config.Settings, want) {
		t.Errorf("dev server settings: %s", d)
	}
	ds := a.DevServer()
	got := map[string][2]any{
		"API timeout":        {ds.Gateway.Timeout, want.APITimeout},
		"batch size":         {ds.Poller.BatchSize, want.BatchSize},
		"batching window":    {ds.Poller.BatchWindow, want.BatchWindow},
		"max concurrency":    {ds.Poller.Concurrency, want.MaxConcurrency},
		"worker timeout":     {ds.Poller.FunctionTimeout, want.WorkerTimeout},
		"reconcile schedule": {ds.SweepEvery, want.ReconcileEvery},
	}
	for name, v := range got {
		if v[0] != v[1] {
			t.Errorf("dev server %s = %v, settings.Defaults() says %v", name, v[0], v[1])
		}
	}
}

// diff names every field, nested ones included, where got and want differ.
func diff(got, want settings.Settings) []string {
	var out []string
	var walk func(path string, g, w reflect.Value)
	walk = func(path string, g, w reflect.Value) {
		if g.Kind() == reflect.Struct {
			for i := range g.NumField() {
				walk(path+"."+g.Type().Field(i).Name, g.Field(i), w.Field(i))
			}
			return
		}
		if !reflect.DeepEqual(g.Interface(), w.Interface()) {
			out = append(out, fmt.Sprintf("%s = %v, settings.Defaults() says %v", path[1:], g.Interface(), w.Interface()))
		}
	}
	walk("", reflect.ValueOf(got), reflect.ValueOf(want))
	return out
}
