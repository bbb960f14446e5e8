package api_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/aijobs/aijobs/pkg/api"
	"github.com/aijobs/aijobs/pkg/settings"
	"github.com/aijobs/aijobs/pkg/wire"
)

func TestTypeNamesNeverLeak(t *testing.T) {
	for _, b := range []string{`{"input":{"messages":[{"role":"user","content":5}]}}`, `{"input":{"messages":[{"role":"user","content":"x"}],"temperature":"hot"}}`, `{"input":{"messages":{}}}`, `{"model":5,"input":{"messages":[{"role":"user","content":"x"}]}}`} {
		_, err := api.ParseCreate("t", "k", []byte(b), settings.Defaults().Limits)
		var e *api.Error
		if !errors.As(err, &e) || e.Code != wire.CodeInvalidRequest {
			t.Fatalf("%s: %v", b, err)
		}
		for _, goName := range []string{"float64", "int", "string]", "[]job", "job.", "*"} {
			if strings.Contains(e.Message, goName) {
				t.Errorf("%s: message %q names a Go type", b, e.Message)
			}
		}
	}
}
