package model_test

import (
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/aijobs/aijobs/pkg/model"
)

type line struct {
	ID string `json:"id"`
}

// Every line that decodes reaches each, the last one without its
// newline too; one that does not is passed over, not an error.
func TestEachResultSkipsWhatDoesNotDecode(t *testing.T) {
	var got []string
	err := model.EachResult(strings.NewReader("{\"id\":\"a\"}\nnot json\n\n{\"id\":\"b\"}\n{\"id\":\"c\"}"), "read", func(l line) error {
		got = append(got, l.ID)
		return nil
	})
	if err != nil || strings.Join(got, ",") != "a,b,c" {
		t.Fatalf("got %v, %v: want a,b,c and no error", got, err)
	}
}

// each's own error stops the read as each returned it; a failed read is
// named by what the caller read.
func TestEachResultErrors(t *testing.T) {
	stop := errors.New("stop")
	calls := 0
	err := model.EachResult(strings.NewReader("{\"id\":\"a\"}\n{\"id\":\"b\"}\n"), "read", func(line) error {
		calls++
		return stop
	})
	if err != stop || calls != 1 {
		t.Errorf("each's error: %v after %d calls, want it unwrapped after 1", err, calls)
	}
	cut := io.MultiReader(strings.NewReader("{\"id\":\"a\"}\n"), iotest.ErrReader(io.ErrUnexpectedEOF))
	err = model.EachResult(cut, "openai: read batch file f", func(line) error { return nil })
	if !errors.Is(err, io.ErrUnexpectedEOF) || !strings.HasPrefix(err.Error(), "openai: read batch file f: ") {
		t.Errorf("a cut read: %v", err)
	}
}
