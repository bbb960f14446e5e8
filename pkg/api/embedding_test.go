package api_test

import (
	"errors"
	"testing"

	"github.com/aijobs/aijobs/pkg/api"
	"github.com/aijobs/aijobs/pkg/wire"
)

// A create body's embedding input is decoded strictly and held to its
// rules: each refusal a 422 invalid_request naming the field by its
// path; a good one is stored with its texts and no chat member.
func TestParseCreateHoldsAnEmbeddingInput(t *testing.T) {
	l := testLimits()
	r, err := api.ParseCreate("t", "k", []byte(withInput(`"texts":["a","b"],"dimensions":64`)), l)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(r.InputJSON), `{"texts":["a","b"],"dimensions":64}`; got != want {
		t.Errorf("stored input %s, want %s", got, want)
	}
	for body, field := range map[string]string{
		withInput(`"texts":["a"],"messages":[{"role":"user","content":"x"}]`): "input.texts",
		withInput(`"texts":[]`):                                                "input.texts",
		withInput(`"texts":["a",""]`):                                          "input.texts[1]",
		withInput(`"texts":["a"],"max_tokens":5`):                              "input.max_tokens",
		withInput(`"texts":["a"],"top_p":0.5`):                                 "input.top_p",
		withInput(`"texts":["a"],"dimensions":-1`):                             "input.dimensions",
		withInput(`"texts":"a"`):                                               "input.texts",
		withInput(`"messages":[{"role":"user","content":"x"}],"dimensions":8`): "input.dimensions",
	} {
		_, err := api.ParseCreate("t", "k", []byte(body), l)
		var e *api.Error
		if !errors.As(err, &e) || e.Code != wire.CodeInvalidRequest || e.Field != field {
			t.Errorf("%s: %v, want invalid_request on %s", body, err, field)
		}
	}
}
