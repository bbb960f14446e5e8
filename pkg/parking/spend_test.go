package parking_test

import (
	"testing"
	"time"

	"github.com/aijobs/aijobs/pkg/job"
	"github.com/aijobs/aijobs/pkg/memstore"
	"github.com/aijobs/aijobs/pkg/parking"
)

// A recovery takes a record's promise to hold spend first at its word
// only for the attempt that made it, under the limits it holds itself,
// with no generation started: then a period without the attempt's hold
// proves no call (Void), and a hold found is settled. Otherwise it looks
// at nothing, and the attempt is charged its hold as before promises:
// an enlisted or reattached job's lease moved to another owner with its
// holds settled, and a started generation was a call whatever the
// balance shows (docs/spend.md, "Crash windows").
func TestARecoveryTrustsOnlyTheClaimingAttemptsPromise(t *testing.T) {
	claimed := time.Now().UTC().Add(-time.Minute)
	limits := func(string) []job.PeriodLimit { return []job.PeriodLimit{{Period: job.Day, Limit: 1000}} }
	record := func(mut func(*job.Job)) job.Job {
		j := job.Job{ID: "job_1", Tenant: "t1", Attempts: 2, LeaseOwner: "w_a", SpendFirst: job.SpendFirstOf("d", claimed, "w_a")}
		if mut != nil {
			mut(&j)
		}
		return j
	}
	for _, c := range []struct {
		name           string
		held           bool
		mut            func(*job.Job)
		promised, void bool
	}{
		{"held", true, nil, true, false},
		{"never held", false, nil, true, true},
		{"other limits", false, func(j *job.Job) { j.SpendFirst = job.SpendFirstOf("other", claimed, "w_a") }, false, false},
		{"the lease moved to the batch lane", false, func(j *job.Job) { j.LeaseOwner = job.BatchOwner("w_a") }, false, false},
		{"a generation started", false, func(j *job.Job) { j.Pending = &job.Pending{Owner: "w_a", ID: "resp_1"} }, false, false},
		{"no promise", false, func(j *job.Job) { j.SpendFirst = "" }, false, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			balance := memstore.NewSpend()
			cur := record(c.mut)
			if c.held {
				h := job.SpendHold{Tenant: "t1", Period: job.Day, At: claimed, Limit: 1000, Entry: job.SpendEntry(cur.ID, cur.Attempts), Amount: 70}
				if ok, err := balance.Hold(t.Context(), h); !ok || err != nil {
					t.Fatal(ok, err)
				}
			}
			f := &parking.SpendFirst{Balances: balance, Limits: limits, Digest: "d"}
			l, err := f.Look(t.Context(), cur)
			if err != nil || l.Promised != c.promised || l.Void != c.void {
				t.Fatalf("look = %+v, %v; want promised %v, void %v", l, err, c.promised, c.void)
			}
			if c.held && (len(l.Found) != 1 || l.Found[0].Amount != 70 || l.Found[0].Cost != 70) {
				t.Fatalf("found %+v, want the hold of 70 to settle as spent", l.Found)
			}
			for how, want := range map[parking.How]job.Nanocents{parking.WrittenOff: 70, parking.Voided: 0, parking.Unparked: 30} {
				if st := l.Settles(how, 30); c.held && (len(st) != 1 || st[0].Cost != want) {
					t.Errorf("settles after %v: %+v, want cost %v", how, st, want)
				}
			}
		})
	}
}
