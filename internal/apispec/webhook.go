package apispec

import (
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/getkin/kin-openapi/openapi3"
)

// CheckWebhook holds one callback delivery (its headers and raw body) to
// the document's `jobEvent` webhook: every header it declares required is
// there, and the body is its schema. A receiver in the end-to-end suite
// checks each delivery it gets.
func (v *Validator) CheckWebhook(h http.Header, body []byte) error {
	item := v.doc.Webhooks["jobEvent"]
	if item == nil || item.Post == nil {
		return fmt.Errorf("docs/openapi.yaml declares no jobEvent webhook")
	}
	op := item.Post
	for _, p := range op.Parameters {
		if p.Value != nil && p.Value.In == openapi3.ParameterInHeader && p.Value.Required && h.Get(p.Value.Name) == "" {
			return fmt.Errorf("jobEvent delivery without its %s header", p.Value.Name)
		}
	}
	mt := op.RequestBody.Value.Content.Get("application/json")
	if mt == nil || mt.Schema == nil {
		return fmt.Errorf("the jobEvent webhook declares no JSON body")
	}
	var doc any
	if err := json.Unmarshal(body, &doc); err != nil {
		return fmt.Errorf("jobEvent body is not JSON: %w", err)
	}
	if err := mt.Schema.Value.VisitJSON(doc); err != nil {
		return fmt.Errorf("jobEvent body does not match docs/openapi.yaml: %w", err)
	}
	return nil
}
