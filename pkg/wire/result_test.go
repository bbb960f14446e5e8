package wire

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/aijobs/aijobs/pkg/job"
)

// TestStoredResultsReadAsWritten: results as the worker has stored them
// (before wire.Result existed too) read into a Result and, written again
// as the worker writes, are the same bytes: the type can read every
// record and names each member the records hold.
func TestStoredResultsReadAsWritten(t *testing.T) {
	for _, stored := range []string{
		`{"output":"done","model":"fake-1","usage":{"input_tokens":3,"output_tokens":1}}`,
		`{"output":"<b>é</b> & \u2028","model":"m-1","finish_reason":"stop","usage":{"input_tokens":3,"output_tokens":4,"estimated":true}}`,
		`{"output":"","model":"","usage":{"input_tokens":0,"output_tokens":0}}`,
	} {
		var r Result
		dec := json.NewDecoder(strings.NewReader(stored))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&r); err != nil {
			t.Fatalf("%s: %v", stored, err)
		}
		again, err := job.EncodeJSON(r)
		if err != nil {
			t.Fatal(err)
		}
		if string(again) != stored {
			t.Errorf("stored %s, written again %s", stored, again)
		}
	}
}
