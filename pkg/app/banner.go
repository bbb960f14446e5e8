package app

import "fmt"

// Banner is what the dev server prints on start: where it listens, what it
// talks to, and a request to paste.
func Banner(a *App, addr string) string {
	endpoint := a.Config.Endpoint
	if endpoint == "" {
		endpoint = "AWS (" + a.AWS.Region + ")"
	}
	provider := a.Config.Provider.Kind
	if provider == "openai" {
		provider += " at " + a.Config.Provider.BaseURL + " (" + a.Config.Provider.Model + ")"
	}
	return fmt.Sprintf(`aijobs dev server
  API:      http://%[1]s
  AWS:      %[2]s  table %[3]s
  queue:    %[4]s
  model:    %[5]s
Try it:
  curl -s -X POST http://%[1]s/jobs -H 'Authorization: Bearer tenant-a' -H 'Idempotency-Key: hello-1' \
    -H 'Content-Type: application/json' -d '{"input":{"messages":[{"role":"user","content":"Say hello"}]}}'
  curl -s http://%[1]s/jobs/<id> -H 'Authorization: Bearer tenant-a'
Ctrl-C stops it.
`, addr, endpoint, a.Config.Table, a.Config.QueueURL, provider)
}
