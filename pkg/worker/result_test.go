package worker

import (
	"testing"

	"github.com/aijobs/aijobs/pkg/job"
	"github.com/aijobs/aijobs/pkg/model"
)

// TestTheResultIsStoredAsBefore: a result is stored as the worker stored
// it when it wrote the provider's model.Response itself, byte for byte, so
// the records written before wire.Result read the same as those after.
func TestTheResultIsStoredAsBefore(t *testing.T) {
	for _, r := range []model.Response{
		{Output: "<b>é</b> & \u2028", Model: "m-1", FinishReason: "stop", Usage: model.Usage{InputTokens: 3, OutputTokens: 4, Estimated: true}},
		{Output: "ok"},
	} {
		before, err := job.EncodeJSON(r)
		if err != nil {
			t.Fatal(err)
		}
		now, err := job.EncodeJSON(r.Result())
		if err != nil {
			t.Fatal(err)
		}
		if string(now) != string(before) {
			t.Errorf("stored as %s, before as %s", now, before)
		}
	}
}
