package modeltest

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/aijobs/aijobs/pkg/job"
	"github.com/aijobs/aijobs/pkg/model"
)

// BatchOutcomes reads the ended batch id of b and answers each job's
// outcome as "CLASS IN/OUT est=BOOL" (no class for an answer), the form
// the providers' batch tests compare: what the collector settles, job by
// job. A job reported twice, or an error that shows one of hidden (a key,
// a vendor's message), fails t.
func BatchOutcomes(t *testing.T, b model.Batcher, id string, hidden ...string) map[string]string {
	t.Helper()
	got := map[string]string{}
	err := b.BatchResults(t.Context(), id, func(jobID string, resp model.Response, err error) error {
		if _, dup := got[jobID]; dup {
			t.Errorf("%s reported twice", jobID)
		}
		class, u := job.ErrorClass(""), resp.Usage
		if err != nil {
			class, u = model.Classify(err)
			for _, h := range hidden {
				if strings.Contains(err.Error(), h) {
					t.Errorf("an item's error shows %q: %v", h, err)
				}
			}
		}
		got[jobID] = fmt.Sprintf("%s %d/%d est=%v", class, u.InputTokens, u.OutputTokens, u.Estimated)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// BatchRefusals holds a batch wire's refusals to a call's standard:
// refusing's server answers every request 401 with a body that quotes
// secret, and submitting req to it must fail Auth without showing it;
// running's batch never ends, and its results must not be read.
func BatchRefusals(t *testing.T, refusing, running model.Batcher, req model.Request, secret string) {
	t.Helper()
	_, err := refusing.SubmitBatch(t.Context(), "b_x", []model.Request{req})
	var me *model.Error
	if !errors.As(err, &me) || me.Class != job.Auth || strings.Contains(err.Error(), secret) {
		t.Errorf("submit with a bad key: %v", err)
	}
	id, err := running.SubmitBatch(t.Context(), "b_running", []model.Request{req})
	if err != nil {
		t.Fatal(err)
	}
	if err := running.BatchResults(t.Context(), id, func(string, model.Response, error) error { return nil }); err == nil {
		t.Error("the results of a batch still running were read")
	}
}
