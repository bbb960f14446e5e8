package apispec

import (
	"net/http"
	"strings"
	"testing"
)

func TestCheckWebhook(t *testing.T) {
	v, err := Default()
	if err != nil {
		t.Fatal(err)
	}
	h := http.Header{"Webhook-Id": {"msg_job_abcdefghijklmnopqrstuvwxyz_v4"}, "Webhook-Timestamp": {"1764756000"}, "Webhook-Signature": {"v1,xyz="}}
	view := `{"id":"job_abcdefghijklmnopqrstuvwxyz","state":"succeeded","request_key":"k","input_hash":"sha256:` + strings.Repeat("a", 64) +
		`","model":"default","attempts":1,"max_attempts":4,"progress":1,"cost_cents":0.1,"cost_estimated":false,"budget_cents":50,"saved_cents":0,` +
		`"reserved_cents":0,"error_class":null,"result":null,"created_at":"2026-12-03T10:00:00.000Z","updated_at":"2026-12-03T10:00:01.000Z",` +
		`"deadline":"2026-12-03T10:15:00.000Z","version":4}`
	good := `{"type":"job.succeeded","timestamp":"2026-12-03T10:00:01.000Z","data":` + view + `}`
	if err := v.CheckWebhook(h, []byte(good)); err != nil {
		t.Fatalf("a well-formed delivery: %v", err)
	}
	for name, c := range map[string]struct {
		h    http.Header
		body string
	}{
		"unsigned":       {http.Header{"Webhook-Id": h["Webhook-Id"], "Webhook-Timestamp": h["Webhook-Timestamp"]}, good},
		"unknown type":   {h, strings.Replace(good, "job.succeeded", "job.queued", 1)},
		"an extra field": {h, strings.Replace(good, `"type"`, `"extra":1,"type"`, 1)},
		"not JSON":       {h, "{"},
	} {
		if err := v.CheckWebhook(c.h, []byte(c.body)); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}
