package console_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/aijobs/aijobs/pkg/job"
)

// A job's page lists its input's parts by type, media type, name and
// size, names the schema its answer must follow, and never shows a
// part's bytes; an input in the payload store is named by its key.
func TestJobPageShowsPartsAndSchemaNotBytes(t *testing.T) {
	f := setup(t)
	secret := []byte("%PDF-1.4 the contract's secret terms")
	data := base64.StdEncoding.EncodeToString(secret)
	img := base64.StdEncoding.EncodeToString([]byte("\x89PNG\r\n\x1a\nxy"))
	input := `{"messages":[{"role":"user","content":[{"type":"document","media_type":"application/pdf","data":"` + data + `","name":"contract.pdf"},` +
		`{"type":"image","media_type":"image/png","data":"` + img + `"},{"type":"text","text":"Summarise"}]}],"max_tokens":64,` +
		`"response_format":{"type":"json_schema","json_schema":{"name":"summary","strict":true,"schema":{"type":"object"}}}}`
	mk := func(key string, in json.RawMessage, ref *job.Payload) string {
		j := job.Job{ID: job.NewID("tenant-a", key), Tenant: "tenant-a", RequestKey: key, InputHash: "sha256:p", Model: "default",
			Input: in, InputRef: ref, State: job.Queued, MaxAttempts: 1, Budget: job.Cents(5), Reserve: 1000,
			Deadline: now.Add(time.Hour), Version: 1, CreatedAt: now, UpdatedAt: now}
		if _, err := f.store.Create(context.Background(), j); err != nil {
			t.Fatal(err)
		}
		return j.ID
	}
	code, body := f.get(t, "/jobs/"+mk("parts", json.RawMessage(input), nil))
	if code != 200 {
		t.Fatalf("job page: %d %s", code, body)
	}
	wantAll(t, "job page", body, `id="schema">The answer must be JSON the schema <span class="mono">summary</span> accepts (strict)`,
		`<td>0 (user)</td><td>document</td><td>application/pdf</td><td>contract.pdf</td><td class="n">36</td>`,
		`<td>0 (user)</td><td>image</td><td>image/png</td><td></td><td class="n">10</td>`,
		`<td>0 (user)</td><td>text</td><td></td><td></td><td class="n">9</td>`, `(36 bytes, not shown)`)
	if strings.Contains(body, data) || strings.Contains(body, img) || strings.Contains(body, "secret terms") {
		t.Errorf("the job page shows a part's bytes")
	}

	code, body = f.get(t, "/jobs/"+mk("stored", nil, &job.Payload{Key: "inputs/x/abc", Size: 6_000_000, SHA256: "sha256:abc"}))
	if code != 200 || !strings.Contains(body, `id="input-ref">6000000 bytes in the payload store at <span class="mono">inputs/x/abc</span>`) {
		t.Errorf("a stored input's page: %d, no payload key", code)
	}
}
