package fake

import (
	"strings"

	"github.com/aijobs/aijobs/pkg/model"
)

// schemaReply is the answer to a request with a response_format: a JSON
// instance of its schema (model.Example), or, when a message holds
// [[fake:nonconforming]], JSON no such schema accepts
// (model.Nonconforming), so a test can watch the worker refuse it. It
// reports false for a request without one.
func schemaReply(r model.Request) (string, bool) {
	f := r.Options.ResponseFormat
	if f == nil || f.JSONSchema == nil {
		return "", false
	}
	for _, m := range r.Messages {
		if strings.Contains(m.Content, "[[fake:nonconforming]]") {
			return model.Nonconforming, true
		}
	}
	return model.Example(f.JSONSchema.Schema), true
}
