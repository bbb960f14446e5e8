package console_test

import (
	"context"
	"errors"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/aijobs/aijobs/pkg/console"
	"github.com/aijobs/aijobs/pkg/job"
	"github.com/aijobs/aijobs/pkg/memstore"
)

type links struct{ err error }

func (l links) ResultLink(_ context.Context, key string, ttl time.Duration) (string, time.Time, error) {
	if l.err != nil {
		return "", time.Time{}, l.err
	}
	return "https://payloads.example/" + key + "?X-Amz-Expires=900&X-Amz-Signature=abc", now.Add(ttl), nil
}

// TestAJobPageLinksALargeAnswer: an answer kept in the payload store is
// shown as a link (signed for the page), with its size and hash; without
// a signer, or when signing fails, the page says why there is no link.
func TestAJobPageLinksALargeAnswer(t *testing.T) {
	for _, c := range []struct {
		name  string
		links console.ResultLinks
		want  []string
	}{
		{"signed", links{}, []string{`<a href="https://payloads.example/results/`, `?X-Amz-Expires=900&amp;X-Amz-Signature=abc">read it</a>`, "1048576 bytes", "sha256:ab"}},
		{"no signer", nil, []string{"no link: the console was started without the payload bucket", "1048576 bytes"}},
		{"signing fails", links{err: errors.New("presign: boom")}, []string{"no link: the payload store could not sign one (presign: boom)"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			store := memstore.New()
			ctx := context.Background()
			j := job.Job{ID: job.NewID("tenant-a", "large"), Tenant: "tenant-a", RequestKey: "large", InputHash: "sha256:l", Model: "default",
				State: job.Queued, MaxAttempts: 3, Budget: job.Cents(5), Deadline: now.Add(time.Hour), Version: 1, CreatedAt: now, UpdatedAt: now}
			if _, err := store.Create(ctx, j); err != nil {
				t.Fatal(err)
			}
			if _, err := store.Claim(ctx, job.Claim{ID: j.ID, Owner: "w", Now: now, LeaseUntil: now.Add(time.Minute)}); err != nil {
				t.Fatal(err)
			}
			ref := &job.Payload{Key: "results/" + j.ID + "/w", Size: 1 << 20, SHA256: "sha256:ab"}
			if _, err := store.Succeed(ctx, job.Succeed{ID: j.ID, Owner: "w", Now: now, ResultRef: ref, ExpiresAt: now.Add(time.Hour)}); err != nil {
				t.Fatal(err)
			}
			con, err := console.New(console.Config{Store: store, Token: token, Access: access, ResultLinks: c.links,
				Retention: job.Retention{Succeeded: time.Hour, Failed: time.Hour}})
			if err != nil {
				t.Fatal(err)
			}
			f := &fixture{srv: httptest.NewServer(con)}
			t.Cleanup(f.srv.Close)
			code, body := f.get(t, "/jobs/"+j.ID)
			if code != 200 {
				t.Fatalf("job page: %d %s", code, body)
			}
			wantAll(t, "job page", body, append(c.want, `id="result-link"`)...)
		})
	}
}
