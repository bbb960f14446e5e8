package anthropic_test

import (
	"context"
	"strings"
	"testing"

	"github.com/aijobs/aijobs/internal/modelfuzz"
	"github.com/aijobs/aijobs/pkg/model/anthropic"
)

// FuzzStream feeds arbitrary bytes to the server-sent event parser through
// the public client (issue 9, section 3): no panic, and every error is a
// classified, secret-free *model.Error (modelfuzz.Check). Seeds are in
// testdata/fuzz/FuzzStream; `make fuzz` runs it for FUZZTIME.
func FuzzStream(f *testing.F) {
	// An event line over the parser's 1 MiB line limit (too big a file
	// for the committed corpus).
	f.Add([]byte("data: " + strings.Repeat("y", 1<<20+10) + "\n\n"))
	f.Fuzz(func(t *testing.T, body []byte) {
		c, err := anthropic.New(anthropic.Config{BaseURL: "http://anthropic.test", APIKey: modelfuzz.Key, Model: "m", Stream: true,
			HTTPClient: modelfuzz.Answer{ContentType: "text/event-stream", Body: body}})
		if err != nil {
			t.Fatal(err)
		}
		_, err = c.Generate(context.Background(), modelfuzz.Request(t))
		modelfuzz.Check(t, err)
	})
}
