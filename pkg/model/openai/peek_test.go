package openai_test

import (
	"context"
	"errors"
	"net/http"
	"reflect"
	"testing"

	"github.com/aijobs/aijobs/pkg/model"
	"github.com/aijobs/aijobs/pkg/model/openai"
)

// A peeking create (a detached rung) tells the id and answers still
// running at once: no poll, no cancel; the generation runs on.
func TestAPeekingCreateAnswersStillRunningAtOnce(t *testing.T) {
	f := serveResponses(t, ok(object("queued", "")), ok(completed(answered, "never read")))
	c, r := f.client(t)
	r.Peek = true
	if _, err := c.Generate(context.Background(), r); !errors.Is(err, model.ErrStillRunning) {
		t.Fatalf("Generate: %v, want ErrStillRunning", err)
	}
	want := []string{"POST /responses", "started " + respID}
	if log := f.requests(); !reflect.DeepEqual(log, want) {
		t.Fatalf("requests %q, want %q", log, want)
	}
}

// A peeking resume reads the generation once: still running, its
// answer, a read that may pass (still running: look again), or gone.
func TestAPeekingResumeReadsOnce(t *testing.T) {
	for _, tt := range []struct {
		name string
		poll answer
		want error
	}{
		{"running", ok(object("in_progress", "")), model.ErrStillRunning},
		{"completed", ok(completed(answered, "Once")), nil},
		{"a server error", answer{http.StatusBadGateway, `{"error":{"message":"bad gateway"}}`, nil}, model.ErrStillRunning},
		{"gone", answer{http.StatusNotFound, `{"error":{"message":"not found"}}`, nil}, model.ErrGone},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := serveResponses(t, answer{}, tt.poll)
			c, r := f.client(t)
			r.Resume, r.Peek = respID, true
			got, err := c.Generate(context.Background(), r)
			if tt.want == nil && (err != nil || got.Output != "Once" || got.Usage != answered) {
				t.Fatalf("Generate: %+v, %v; want the answer", got, err)
			}
			if tt.want != nil && !errors.Is(err, tt.want) {
				t.Fatalf("Generate: %v, want %v", err, tt.want)
			}
			if log := f.requests(); !reflect.DeepEqual(log, []string{"GET " + respPath}) {
				t.Fatalf("requests %q, want one read", log)
			}
		})
	}
}

// Abandon sends the cancel of a generation nobody waits for.
func TestAbandonCancelsTheGeneration(t *testing.T) {
	f := serveResponses(t, answer{}, ok(object("in_progress", "")))
	c, _ := f.client(t)
	c.(*openai.Client).Abandon(context.Background(), respID)
	if log := f.requests(); !reflect.DeepEqual(log, []string{"POST " + respPath + "/cancel"}) {
		t.Fatalf("requests %q, want the cancel", log)
	}
}
