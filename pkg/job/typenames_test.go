package job_test

import (
	"github.com/aijobs/aijobs/pkg/job"
	"github.com/aijobs/aijobs/pkg/settings"
	"strings"
	"testing"
)

func TestTypeNamesNeverLeak(t *testing.T) {
	for _, b := range []string{`{"input":{"messages":[{"role":"user","content":5}]}}`, `{"input":{"messages":[{"role":"user","content":"x"}],"temperature":"hot"}}`, `{"input":{"messages":{}}}`, `{"model":5,"input":{"messages":[{"role":"user","content":"x"}]}}`} {
		_, err := job.ParseCreate("t", "k", []byte(b), settings.Defaults().Limits)
		e, ok := err.(*job.Error)
		if !ok || e.Code != job.CodeInvalidRequest {
			t.Fatalf("%s: %v", b, err)
		}
		for _, goName := range []string{"float64", "int", "string]", "[]job", "job.", "*"} {
			if strings.Contains(e.Message, goName) {
				t.Errorf("%s: message %q names a Go type", b, e.Message)
			}
		}
	}
}
