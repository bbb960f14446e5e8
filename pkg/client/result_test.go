package client_test

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/aijobs/aijobs/pkg/wire"
)

// linkServer answers GET /jobs/job_1 with a succeeded view whose answer
// is linked at /results/job_1 (served as body, after failFirst 503s),
// claiming size and hash.
type linkServer struct {
	body        []byte
	size        int64
	hash        string
	failFirst   int32
	fetches     atomic.Int32
	fetchedAuth atomic.Value
}

func (l *linkServer) start(t *testing.T) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/jobs/job_1":
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("ETag", `"3"`)
			_, _ = w.Write([]byte(`{"id":"job_1","state":"succeeded","version":3,"result":null,` +
				`"result_url":"http://` + r.Host + `/results/job_1?X-Amz-Signature=abc","result_expires_at":"2026-12-02T10:15:00.000Z",` +
				`"result_bytes":` + jsonInt(l.size) + `,"result_hash":"` + l.hash + `"}`))
		case "/results/job_1":
			l.fetchedAuth.Store(r.Header.Get("Authorization"))
			if n := l.fetches.Add(1); n <= l.failFirst {
				w.WriteHeader(http.StatusServiceUnavailable)
				return
			}
			_, _ = w.Write(l.body)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

func jsonInt(n int64) string { b, _ := json.Marshal(n); return string(b) }

func digest(b []byte) string {
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// answerOf is a Result's JSON with an output of n bytes.
func answerOf(n int) []byte {
	b, _ := json.Marshal(wire.Result{Output: strings.Repeat("x", n), Model: "m"})
	return b
}

// TestGetFollowsALinkedAnswer: Get fetches the linked answer (with no
// credentials, which would break a presigned URL), checks it and fills
// Result as if inline; a 5xx of the fetch is retried; GetState leaves
// the link alone.
func TestGetFollowsALinkedAnswer(t *testing.T) {
	body := answerOf(1 << 20)
	l := &linkServer{body: body, size: int64(len(body)), hash: digest(body), failFirst: 1}
	srv := l.start(t)
	c, _ := newClient(t, srv.URL, "tenant-a")

	s, err := c.Get(t.Context(), "job_1", "")
	if err != nil {
		t.Fatal(err)
	}
	var res wire.Result
	if err := json.Unmarshal(s.View.Result, &res); err != nil || len(res.Output) != 1<<20 {
		t.Fatalf("result: %d bytes of output, %v; want the linked 1 MB answer", len(res.Output), err)
	}
	if n, auth := l.fetches.Load(), l.fetchedAuth.Load(); n != 2 || auth != "" {
		t.Fatalf("%d fetches, Authorization %q: want the 503 retried, and no credentials sent", n, auth)
	}

	s, err = c.GetState(t.Context(), "job_1", "")
	if err != nil || s.View.Result != nil || s.View.ResultURL == "" || l.fetches.Load() != 2 {
		t.Fatalf("GetState: result %d bytes, url %q, %d fetches, %v: want the link alone", len(s.View.Result), s.View.ResultURL, l.fetches.Load(), err)
	}
}

// TestGetRefusesALinkedAnswerThatIsNotTheOneStored: a body cut short or
// changed is an error, never the answer.
func TestGetRefusesALinkedAnswerThatIsNotTheOneStored(t *testing.T) {
	body := answerOf(1000)
	for _, c := range []struct {
		name string
		l    *linkServer
	}{
		{"cut short", &linkServer{body: body[:500], size: int64(len(body)), hash: digest(body)}},
		{"another body of the same size", &linkServer{body: answerOf(1000), size: int64(len(body)), hash: digest([]byte("other"))}},
		{"longer than the record says", &linkServer{body: body, size: 10, hash: digest(body[:10])}},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv := c.l.start(t)
			cl, _ := newClient(t, srv.URL, "tenant-a")
			if s, err := cl.Get(t.Context(), "job_1", ""); err == nil {
				t.Fatalf("Get answered %d bytes of result, want an error", len(s.View.Result))
			}
		})
	}
}
