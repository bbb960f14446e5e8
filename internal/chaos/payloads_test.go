package chaos

import (
	"slices"
	"testing"

	"github.com/aijobs/aijobs/pkg/job"
)

// The payload store is held to the records: an object no record points
// at is counted (its lifecycle rule expires it), a record whose object is
// missing and an object no rule expires break the run.
func TestPayloadsAreHeldToTheRecords(t *testing.T) {
	ref := func(k string) *job.Payload { return &job.Payload{Key: k} }
	records := map[string]job.Job{"a": {InputRef: ref("inputs/a/1")}, "b": {}, "c": {InputRef: ref("inputs/c/1")}}
	keys := map[string]bool{"inputs/a/1": true, "inputs/x/9": true, "uploads/t/u": true}
	pc := countPayloads(keys, records)
	if pc.Objects != 3 || pc.Referenced != 1 || pc.Unreferenced != 2 || !slices.Equal(pc.Dangling, []string{"c"}) || len(pc.Outside) != 0 || !pc.broken() {
		t.Fatalf("%+v", pc)
	}
	keys["inputs/c/1"], keys["stray"] = true, true
	pc = countPayloads(keys, records)
	if len(pc.Dangling) != 0 || !slices.Equal(pc.Outside, []string{"stray"}) || !pc.broken() {
		t.Fatalf("%+v", pc)
	}
	delete(keys, "stray")
	if pc = countPayloads(keys, records); pc.broken() {
		t.Fatalf("orphans under expiring prefixes broke the run: %+v", pc)
	}
}
