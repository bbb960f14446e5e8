package e2e

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aijobs/aijobs/pkg/client"
	"github.com/aijobs/aijobs/pkg/wire"
)

// TestAOneMegabyteAnswerIsStoredPolledAndFetched: on the emulator, a job
// whose answer is 1 MB (the fake's answer_bytes) succeeds with the answer
// in the payload store, not on the record; a poll answers it as a link
// (result null, result_url, its size and hash), and pkg/client's Get
// follows the link and hands back the whole answer as if inline; one
// generation, and the record's cost is exactly what the fake billed
// (issue N, "Done when": a 1 MB answer stored, polled and fetched).
func TestAOneMegabyteAnswerIsStoredPolledAndFetched(t *testing.T) {
	t.Parallel()
	s := startStack(t, steadyLease)
	id := s.submit("tenant-a", "large-answer", jobBody("[[fake:answer_bytes=1048576]] write the long report", ""))
	v := s.wait("tenant-a", id, 30*time.Second, "succeeded", "failed")
	if v["state"] != "succeeded" {
		t.Fatalf("job %s: %v (%v)", id, v["state"], v["error_class"])
	}

	// The poll: a link, never the body.
	r := s.get("tenant-a", id)
	if r.body["result"] != nil || !strings.HasPrefix(num(r.body, "result_url"), "http") || len(r.raw) > 64<<10 {
		t.Fatalf("poll: %d bytes, result %.60v, url %v: want a small view with a link", len(r.raw), r.body["result"], r.body["result_url"])
	}
	if size, _ := strconv.Atoi(num(r.body, "result_bytes")); size < 1<<20 || !strings.HasPrefix(num(r.body, "result_hash"), "sha256:") {
		t.Fatalf("poll: result_bytes %v, result_hash %v", r.body["result_bytes"], r.body["result_hash"])
	}
	if exp, err := time.Parse(wire.TimeFormat, num(r.body, "result_expires_at")); err != nil || exp.Before(time.Now().Add(10*time.Minute)) {
		t.Fatalf("result_expires_at %v (%v): want about 15 minutes ahead", r.body["result_expires_at"], err)
	}

	// The record keeps the ref, not the answer.
	rec, err := s.app.Store.Get(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	if rec.ResultRef == nil || len(rec.Result) != 0 || !strings.HasPrefix(rec.ResultRef.Key, "results/"+id+"/") {
		t.Fatalf("record: ref %+v, %d bytes inline", rec.ResultRef, len(rec.Result))
	}

	// The client follows the link.
	c, err := client.New(client.Config{BaseURL: s.url, Auth: client.BearerToken("tenant-a")})
	if err != nil {
		t.Fatal(err)
	}
	snap, err := c.Get(t.Context(), id, "")
	if err != nil {
		t.Fatal(err)
	}
	var res wire.Result
	if err := json.Unmarshal(snap.View.Result, &res); err != nil || len(res.Output) != 1<<20 || !strings.HasPrefix(res.Output, "fake reply to:") {
		t.Fatalf("fetched: %d bytes of output (%v), want the 1 MB answer", len(res.Output), err)
	}
	if g := s.fake.Generations(id); g != 1 {
		t.Fatalf("%d generations, want 1", g)
	}
	if billed := s.fake.Billed(id); snap.View.CostCents != billed || billed == 0 || snap.View.CostEstimated {
		t.Fatalf("cost_cents %v (estimated %v), the fake billed %v: want exactly that", snap.View.CostCents, snap.View.CostEstimated, billed)
	}
	if rec.Cost != snap.View.CostCents {
		t.Fatalf("record cost %v, view %v", rec.Cost, snap.View.CostCents)
	}

	// The poll's link is a plain GET, no credentials (kumo checks no
	// presigned signature, so its expiry is the unit tests' to prove).
	resp, err := http.Get(num(r.body, "result_url"))
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("a plain GET of the link: %d", resp.StatusCode)
	}
}

// TestAOneMegabyteAnswerReachesItsCallbackByLink: the webhook event of a
// job whose answer is 1 MB carries it by a link the notifier signed
// (result null, the event small), and a plain GET of the link reads the
// answer whose size and hash the event names.
func TestAOneMegabyteAnswerReachesItsCallbackByLink(t *testing.T) {
	t.Parallel()
	env := maps.Clone(steadyLease)
	maps.Copy(env, callbackEnv)
	s := startStack(t, env)
	var mu sync.Mutex
	var bodies [][]byte
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		bodies = append(bodies, b)
		mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(hook.Close)
	id := s.submit("tenant-a", "large-callback", jobBody("[[fake:answer_bytes=1048576]] the long report", fmt.Sprintf(`"callback_url":%q`, hook.URL+"/hook")))
	s.wait("tenant-a", id, 30*time.Second, "succeeded")
	var first []byte
	waitFor(t, 20*time.Second, func() bool {
		mu.Lock()
		defer mu.Unlock()
		if len(bodies) > 0 {
			first = bodies[0]
		}
		return first != nil
	})
	if first == nil {
		t.Fatal("no delivery of the succeeded job")
	}
	var ev wire.WebhookEvent
	if err := json.Unmarshal(first, &ev); err != nil || ev.Type != "job.succeeded" || ev.Data.ID != id {
		t.Fatalf("event %.200s: %v", first, err)
	}
	if ev.Data.Result != nil || ev.Data.ResultURL == "" || len(first) > 64<<10 {
		t.Fatalf("event of %d bytes, url %q: want a small event with the answer by link", len(first), ev.Data.ResultURL)
	}
	resp, err := http.Get(ev.Data.ResultURL)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	sum := sha256.Sum256(body)
	if resp.StatusCode != http.StatusOK || int64(len(body)) != ev.Data.ResultBytes || "sha256:"+hex.EncodeToString(sum[:]) != ev.Data.ResultHash {
		t.Fatalf("the link read %d: %d bytes, want %d with the event's hash", resp.StatusCode, len(body), ev.Data.ResultBytes)
	}
}
