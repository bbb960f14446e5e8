package openai_test

import (
	"context"
	"testing"

	"github.com/aijobs/aijobs/internal/modelfuzz"
	"github.com/aijobs/aijobs/pkg/model/openai"
)

// FuzzStream feeds arbitrary bytes to the server-sent event parser through
// the public client (issue 9, section 3): no panic, and every error is a
// classified, secret-free *model.Error (modelfuzz.Check). Seeds are in
// testdata/fuzz/FuzzStream; `make fuzz` runs it for FUZZTIME.
func FuzzStream(f *testing.F) {
	f.Fuzz(func(t *testing.T, body []byte) {
		c, err := openai.New(openai.Config{BaseURL: "http://openai.test/v1", APIKey: modelfuzz.Key, Model: "m", Stream: true,
			HTTPClient: modelfuzz.Answer{ContentType: "text/event-stream", Body: body}})
		if err != nil {
			t.Fatal(err)
		}
		_, err = c.Generate(context.Background(), modelfuzz.Request(t))
		modelfuzz.Check(t, err)
	})
}
