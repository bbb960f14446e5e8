package api

import (
	"encoding/base64"
	"encoding/json"
	"maps"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/aijobs/aijobs/pkg/job"
	"github.com/aijobs/aijobs/pkg/wire"
)

// The fuzz targets drive the real handler over the in-memory store. Their
// properties (issue 9, section 3): no panic and no 5xx for anything a
// client sends; a refusal is a 4xx problem+json whose code is the one that
// status documents, and nothing is written or sent for it; a body accepted
// once is accepted again, as the same job with the same input hash, both
// as sent and re-encoded canonically (keys sorted, whitespace dropped).
// Seeds are in testdata/fuzz/<target>; `make fuzz` runs each for
// FUZZTIME.

// clone copies an event deeply enough to change its headers.
func clone(ev events.APIGatewayV2HTTPRequest) events.APIGatewayV2HTTPRequest {
	ev.Headers = maps.Clone(ev.Headers)
	return ev
}

// wantRefusal asserts that resp is a client problem whose code matches its
// status, and that nothing was written or sent.
func (e *env) wantRefusal(t *testing.T, resp events.APIGatewayV2HTTPResponse) {
	t.Helper()
	p := decodeProblem(t, resp)
	if info, ok := codes[p.Code]; !ok || info.status != resp.StatusCode || resp.StatusCode >= 500 {
		t.Fatalf("status %d with code %q: not a documented client problem (%s)", resp.StatusCode, p.Code, resp.Body)
	}
	if e.store.Len() != 0 || e.queue.count() != 0 {
		t.Fatalf("a refused request left %d records and %d messages", e.store.Len(), e.queue.count())
	}
}

// Body encodings of FuzzCreate: as is, base64 (as API Gateway sends a
// binary body), and raw bytes flagged as base64 (garbage to decode).
const (
	bodyPlain = iota
	bodyBase64
	bodyFlagged
)

func FuzzCreate(f *testing.F) {
	f.Add([]byte(simpleBody), "k", "application/json", uint8(bodyPlain))
	base := createReq(f, "", "")
	f.Fuzz(func(t *testing.T, body []byte, key, contentType string, encoding uint8) {
		e := newEnv(t)
		ev := clone(base)
		ev.Body, ev.IsBase64Encoded = string(body), false
		switch encoding % 3 {
		case bodyBase64:
			ev.Body, ev.IsBase64Encoded = base64.StdEncoding.EncodeToString(body), true
		case bodyFlagged:
			ev.IsBase64Encoded = true
		}
		delete(ev.Headers, "content-type")
		if contentType != "" {
			ev.Headers["content-type"] = contentType
		}
		if key != "" {
			ev.Headers["idempotency-key"] = key
		}
		resp := e.do(t, ev)
		if resp.StatusCode != http.StatusAccepted {
			e.wantRefusal(t, resp)
			return
		}
		first := decodeView(t, resp)
		if e.store.Len() != 1 || e.queue.countFor(first.ID) != 1 {
			t.Fatalf("accepted: %d records, %d sends", e.store.Len(), e.queue.countFor(first.ID))
		}
		if first.ID != job.NewID("jwt:tenant-a", key) {
			t.Fatalf("id %s is not the id of the tenant and key", first.ID)
		}

		// The same request again, then the body in canonical form: the same
		// job, the same input hash.
		canonical, err := job.Canonical(body)
		if err != nil {
			t.Fatalf("an accepted body has no canonical form: %v", err)
		}
		again := clone(ev)
		canon := clone(ev)
		canon.Body, canon.IsBase64Encoded = string(canonical), false
		canon.Headers["content-type"] = "application/json"
		for name, replay := range map[string]events.APIGatewayV2HTTPRequest{"as sent": again, "canonical": canon} {
			e.clock.Advance(time.Second)
			resp := e.do(t, replay)
			if resp.StatusCode != http.StatusOK || resp.Headers["Idempotent-Replayed"] != "true" {
				t.Fatalf("replay %s: %d %s", name, resp.StatusCode, resp.Body)
			}
			if v := decodeView(t, resp); v.ID != first.ID || v.InputHash != first.InputHash || v.Version != 1 {
				t.Fatalf("replay %s: %+v, first %+v", name, v, first)
			}
		}
		if e.store.Len() != 1 {
			t.Fatalf("%d records after replays", e.store.Len())
		}
	})
}

// listFixture is an env holding five jobs of tenant-a, a second apart, two
// of them finished, and one of tenant-b; it returns tenant-a's ids.
func listFixture(t *testing.T) (*env, map[string]bool) {
	t.Helper()
	e := newEnv(t)
	mine := map[string]bool{}
	var ids []string
	for _, k := range []string{"k0", "k1", "k2", "k3", "k4"} {
		ids = append(ids, e.mustCreate(t, k))
		mine[ids[len(ids)-1]] = true
		e.clock.Advance(time.Second)
	}
	e.succeed(t, ids[1])
	e.succeed(t, ids[3])
	if resp := e.do(t, asTenant(createReq(t, "theirs", simpleBody), "tenant-b")); resp.StatusCode != http.StatusAccepted {
		t.Fatal(resp.Body)
	}
	return e, mine
}

func FuzzList(f *testing.F) {
	f.Add("limit=2", "")
	base := listReq(f, "")
	f.Fuzz(func(t *testing.T, query, cursor string) {
		e, mine := listFixture(t)
		ev := clone(base)
		ev.RawQueryString = query
		if cursor != "" {
			if ev.RawQueryString != "" {
				ev.RawQueryString += "&"
			}
			ev.RawQueryString += "cursor=" + url.QueryEscape(cursor)
		}
		// Follow the pages the answer offers, a few at most.
		for page := 0; page < 4; page++ {
			resp := e.do(t, ev)
			if resp.StatusCode != http.StatusOK {
				p := decodeProblem(t, resp)
				if resp.StatusCode != http.StatusBadRequest || p.Code != wire.CodeInvalidRequest {
					t.Fatalf("list %q: %d %s", ev.RawQueryString, resp.StatusCode, resp.Body)
				}
				if page > 0 {
					t.Fatalf("the cursor the API returned was refused: %s", resp.Body)
				}
				return
			}
			var b wire.Page
			if err := json.Unmarshal([]byte(resp.Body), &b); err != nil {
				t.Fatalf("list body %s: %v", resp.Body, err)
			}
			if len(b.Jobs) > job.MaxListLimit {
				t.Fatalf("%d jobs on one page", len(b.Jobs))
			}
			for _, s := range b.Jobs {
				if !mine[s.ID] {
					t.Fatalf("listed %s, not a job of the caller", s.ID)
				}
			}
			if b.NextCursor == "" {
				return
			}
			vals, err := url.ParseQuery(ev.RawQueryString)
			if err != nil {
				t.Fatalf("a query the API answered does not parse: %v", err)
			}
			vals.Set("cursor", b.NextCursor)
			ev.RawQueryString = vals.Encode()
		}
	})
}
