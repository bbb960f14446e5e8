package api

import (
	"testing"
	"time"

	"github.com/aijobs/aijobs/pkg/job"
	"github.com/aijobs/aijobs/pkg/wire"
)

// What a client's ListQuery writes is what the handler reads: the
// parameters are named once, so the two sides cannot drift apart.
func TestListQueryIsReadAsWritten(t *testing.T) {
	cursor := job.Position{CreatedAt: t0, ID: job.NewID("t", "k")}.Cursor()
	since := time.Date(2026, 12, 1, 9, 30, 15, 999_000_000, time.FixedZone("CET", 3600))
	for _, q := range []wire.ListQuery{
		{},
		{State: job.Failed, ErrorClass: job.RateLimited, Since: since, Limit: 50, Cursor: cursor},
		{State: job.Queued, Limit: job.MaxListLimit},
	} {
		got, bad := parseList(q.Values().Encode())
		if bad != nil {
			t.Fatalf("%+v: refused: %v", q, bad)
		}
		want := job.ListQuery{State: q.State, Class: q.ErrorClass, Limit: q.Limit, Cursor: q.Cursor}
		if !q.Since.IsZero() {
			want.Since = q.Since.Truncate(time.Second)
		}
		if got.State != want.State || got.Class != want.Class || got.Limit != want.Limit || got.Cursor != want.Cursor || !got.Since.Equal(want.Since) {
			t.Errorf("%+v read as %+v, want %+v", q, got, want)
		}
	}
}
