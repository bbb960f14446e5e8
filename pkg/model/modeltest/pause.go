package modeltest

import (
	"errors"
	"testing"
	"time"

	"github.com/aijobs/aijobs/pkg/job"
	"github.com/aijobs/aijobs/pkg/model"
)

// Heard is what a call must make of the key's limits its server's
// headers told: with no Class, an answer that reports Left; with one, an
// error of that class whose pause is Pause, less at most Slack (the time
// the call took eats into it; never more, never negative).
type Heard struct {
	Class        job.ErrorClass
	Left         model.Left
	Pause, Slack time.Duration
}

// Check fails t unless resp and err are what h says.
func (h Heard) Check(t testing.TB, resp model.Response, err error) {
	t.Helper()
	var got time.Duration
	if h.Class == "" {
		if err != nil {
			t.Fatalf("Generate: %v", err)
		}
		if resp.Left != h.Left {
			t.Fatalf("left %+v, want %+v", resp.Left, h.Left)
		}
	} else {
		var me *model.Error
		if !errors.As(err, &me) || me.Class != h.Class {
			t.Fatalf("got %v, want a *model.Error of class %q", err, h.Class)
		}
		got = me.Pause
	}
	if got > h.Pause || got < 0 || h.Pause-got >= h.Slack {
		t.Fatalf("pause %v, want %v (less at most %v)", got, h.Pause, h.Slack)
	}
}
