package job_test

import (
	"encoding/base64"
	"errors"
	"testing"
	"time"

	"github.com/aijobs/aijobs/pkg/job"
)

// TestACursorCarriesItsPosition: a position comes back from its cursor to
// the millisecond, and a cursor that carries no position with a time (a
// bare id, as kumo's store once made them, a negative time, garbage) is
// an invalid_request naming the cursor: a merge of shards has no place
// for an id alone.
func TestACursorCarriesItsPosition(t *testing.T) {
	p := job.Position{CreatedAt: time.Date(2026, 12, 6, 22, 0, 0, 123_000_000, time.UTC), ID: job.NewID("t", "k")}
	if got, err := job.ParseCursor(p.Cursor()); err != nil || !got.CreatedAt.Equal(p.CreatedAt) || got.ID != p.ID {
		t.Fatalf("round trip: %+v, %v; want %+v", got, err, p)
	}
	enc := func(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }
	for name, c := range map[string]string{
		"an id alone":   base64.RawURLEncoding.EncodeToString([]byte("." + p.ID)),
		"negative time": enc("-5." + p.ID),
		"not a number":  enc("x." + p.ID),
		"not an id":     enc("1.job_nope"),
		"not base64":    "!!",
	} {
		_, err := job.ParseCursor(c)
		var je *job.Error
		if !errors.As(err, &je) || je.Code != job.CodeInvalidRequest || je.Field != "cursor" {
			t.Errorf("%s (%q): %v, want invalid_request on cursor", name, c, err)
		}
	}
}
