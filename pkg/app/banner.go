package app

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/aijobs/aijobs/pkg/config"
)

// Banner is what the dev server prints on start: where it listens, what it
// talks to, its model routes, and a request to paste.
func Banner(a *App, addr string) string {
	endpoint := a.Config.Endpoint
	if endpoint == "" {
		endpoint = "AWS (" + a.AWS.Region + ")"
	}
	var routes strings.Builder
	for _, name := range slices.Sorted(maps.Keys(a.Config.Routes)) {
		var rungs []string
		for _, g := range a.Config.Routes[name].Rungs {
			p := a.Config.Providers[g.Provider]
			where := p.Kind
			if p.BaseURL != "" {
				where += " at " + p.BaseURL
			}
			name := g.Model
			if name == "" {
				name = p.Kind
			}
			rungs = append(rungs, name+" ("+where+")")
		}
		fmt.Fprintf(&routes, "\n    %-10s %s", name, strings.Join(rungs, " -> "))
	}
	callbacks := "off (AIJOBS_CALLBACKS=false)"
	if a.Notifier != nil {
		made := "read from"
		if a.WebhookSecretCreated {
			made = "created now in"
		}
		callbacks = fmt.Sprintf("on; each tenant's events are signed with its own key (GET /webhook-key), derived from the deployment secret %s Secrets Manager %q",
			made, a.Config.WebhookSecretID)
		if a.Config.Settings.CallbackLoopback {
			callbacks += "; http to loopback allowed"
		}
	}
	return fmt.Sprintf(`aijobs dev server
  API:      http://%[1]s
  AWS:      %[2]s  table %[3]s
  queue:    %[4]s
  routes:%[5]s
  reconciler: every %[6]s
  callbacks: %[7]s
Try it:
  curl -s -X POST http://%[1]s/jobs -H 'Authorization: Bearer tenant-a' -H 'Idempotency-Key: hello-1' \
    -H 'Content-Type: application/json' -d '{"input":{"messages":[{"role":"user","content":"Say hello"}]}}'
  curl -s http://%[1]s/jobs/<id> -H 'Authorization: Bearer tenant-a'
  curl -s http://%[1]s/jobs -H 'Authorization: Bearer tenant-a'
  curl -s http://%[1]s/webhook-key -H 'Authorization: Bearer tenant-a'
Operator commands (bin/aijobs failures, replay, advise, console) reach this deployment in a shell with:
  %[8]s
Ctrl-C stops it.
`, addr, endpoint, a.Config.Table, a.Config.QueueURL, routes.String(), a.Config.Settings.ReconcileEvery, callbacks,
		config.OperatorExports(a.Config))
}
