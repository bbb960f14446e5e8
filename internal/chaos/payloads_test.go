package chaos

import (
	"context"
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

// Answers are objects like inputs: one no record points at is counted as
// an answer, one a record points at and that is missing breaks the run.
func TestAnswersAreHeldToTheRecords(t *testing.T) {
	records := map[string]job.Job{"a": {State: job.Succeeded, ResultRef: &job.Payload{Key: "results/a/w1"}}}
	keys := map[string]bool{"results/a/w1": true, "results/a/w0": true}
	pc := countPayloads(keys, records)
	if pc.Results != 2 || pc.UnreferencedResults != 1 || pc.Referenced != 1 || pc.broken() {
		t.Fatalf("%+v", pc)
	}
	delete(keys, "results/a/w1")
	if pc = countPayloads(keys, records); !slices.Equal(pc.Dangling, []string{"a"}) {
		t.Fatalf("a missing answer was not dangling: %+v", pc)
	}
}

type objects map[string][]byte

func (o objects) Get(_ context.Context, key string, limit int64) ([]byte, error) {
	b, ok := o[key]
	if !ok {
		return nil, job.NotFound()
	}
	if int64(len(b)) > limit {
		return nil, job.Errorf(job.CodeTooLarge, "too large")
	}
	return b, nil
}

// Each answer by link is read back and held to its record's size and
// digest: the right bytes pass, other bytes of the same size, a missing
// object and a larger one break the run.
func TestAnswersByLinkAreReadBackAsRecorded(t *testing.T) {
	good := []byte("the long report")
	ref := func(key string) *job.Payload { p := job.PayloadOf(key, good); return &p }
	store := objects{"results/a/w": good, "results/b/w": []byte("the long rep0rt"), "results/d/w": append(good, '!')}
	records := map[string]job.Job{
		"a": {State: job.Succeeded, ResultRef: ref("results/a/w")},
		"b": {State: job.Succeeded, ResultRef: ref("results/b/w")},
		"c": {State: job.Succeeded, ResultRef: ref("results/c/w")},
		"d": {State: job.Succeeded, ResultRef: ref("results/d/w")},
		"e": {State: job.Succeeded, Result: good},
	}
	var pc PayloadCount
	checkAnswers(context.Background(), store, records, &pc)
	if pc.ByLink != 4 || pc.LinksChecked != 1 || len(pc.BadAnswers) != 3 || !pc.broken() {
		t.Fatalf("%+v", pc)
	}
}

// The model server's answer_bytes knob pads the answer's text to the size
// asked for (never below its tokens' text) and leaves the tokens alone.
func TestTheAnswerBytesKnobPadsTheAnswer(t *testing.T) {
	p := GenPlan{Tokens: 5, AnswerBytes: answerBytes("[chaos aj 1] hi [[fake:answer_bytes=40960]]")}
	if got := len(p.answerText(5)); got != 40960 {
		t.Fatalf("answer of %d bytes, want 40960", got)
	}
	if got := len(GenPlan{}.answerText(5)); got != 20 {
		t.Fatalf("an answer with no size asked is %d bytes, want 20", got)
	}
	if got := len(p.padding(5)) + 4*5; got != 40960 {
		t.Fatalf("a stream's tokens and padding are %d bytes, want 40960", got)
	}
}
