package client_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/aijobs/aijobs/pkg/api"
	"github.com/aijobs/aijobs/pkg/client"
	"github.com/aijobs/aijobs/pkg/wire"
)

// The client's copy of the API's body limit is the API's.
func TestMaxBodyBytesIsTheAPIs(t *testing.T) {
	if client.MaxBodyBytes != api.MaxBodyBytes {
		t.Fatalf("client.MaxBodyBytes %d, api.MaxBodyBytes %d", client.MaxBodyBytes, api.MaxBodyBytes)
	}
}

// uploadAPI is an API's POST /uploads and POST /jobs and a store's
// presigned PUT on one server: it records what each received, and fails
// the first PUTs when told to.
type uploadAPI struct {
	mu       sync.Mutex
	failPuts int
	put      []byte
	putHdr   http.Header
	putHost  string
	uploads  []wire.UploadRequest
	creates  []map[string]json.RawMessage
	srv      *httptest.Server
}

func newUploadAPI(t *testing.T) *uploadAPI {
	u := &uploadAPI{}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /uploads", func(w http.ResponseWriter, r *http.Request) {
		var req wire.UploadRequest
		_ = json.NewDecoder(r.Body).Decode(&req)
		u.mu.Lock()
		u.uploads = append(u.uploads, req)
		u.mu.Unlock()
		w.WriteHeader(http.StatusCreated)
		_ = json.NewEncoder(w).Encode(wire.Upload{UploadID: "0123456789abcdef0123456789abcdef", URL: u.srv.URL + "/store/up?X-Amz-Signature=s", Method: "PUT",
			Headers: map[string]string{"Host": "store.example", "Content-Length": strconv.FormatInt(req.Size, 10), "Content-Type": req.ContentType}})
	})
	mux.HandleFunc("PUT /store/up", func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		u.mu.Lock()
		defer u.mu.Unlock()
		if u.failPuts > 0 {
			u.failPuts--
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		u.put, u.putHdr, u.putHost = b, r.Header.Clone(), r.Host
	})
	mux.HandleFunc("POST /jobs", func(w http.ResponseWriter, r *http.Request) {
		var m map[string]json.RawMessage
		_ = json.NewDecoder(r.Body).Decode(&m)
		u.mu.Lock()
		u.creates = append(u.creates, m)
		u.mu.Unlock()
		w.WriteHeader(http.StatusAccepted)
		_, _ = io.WriteString(w, `{"id":"job_x","state":"queued","version":1}`)
	})
	u.srv = httptest.NewServer(mux)
	t.Cleanup(u.srv.Close)
	return u
}

// A body over the API's limit goes as an upload: the input PUT to the
// link with its signed headers and no credentials (after a 503 the PUT
// is tried again), the create naming the upload; a body within the limit
// is sent inline and uploads nothing.
func TestSubmitUploadsAnInputOverTheBodyLimit(t *testing.T) {
	u := newUploadAPI(t)
	u.failPuts = 1
	c, sl := newClient(t, u.srv.URL, "tenant-a")
	ctx := context.Background()

	big := client.UserPrompt(strings.Repeat("x", client.MaxBodyBytes), 64)
	if _, _, err := c.Submit(ctx, "big", client.CreateBody{Input: big, BudgetCents: 5}); err != nil {
		t.Fatal(err)
	}
	if len(u.uploads) != 1 || u.uploads[0].Size != int64(len(big)) || u.uploads[0].ContentType != "application/json" {
		t.Fatalf("upload requests %+v, want one of %d bytes of application/json", u.uploads, len(big))
	}
	if string(u.put) != string(big) || len(sl.Waits()) != 1 {
		t.Fatalf("the PUT carried %d bytes after %d waits, want the input's %d after one", len(u.put), len(sl.Waits()), len(big))
	}
	if u.putHost != "store.example" || u.putHdr.Get("Content-Type") != "application/json" || u.putHdr.Get("Authorization") != "" {
		t.Errorf("the PUT's host %q and headers %v: want the signed ones, no Authorization", u.putHost, u.putHdr)
	}
	cr := u.creates[0]
	if string(cr["input_upload"]) != `"0123456789abcdef0123456789abcdef"` || cr["input"] != nil || string(cr["budget_cents"]) != "0.000000005" {
		t.Errorf("the create sent %v: want input_upload, no input, the rest kept", cr)
	}

	if _, _, err := c.Submit(ctx, "small", prompt("hello")); err != nil {
		t.Fatal(err)
	}
	if len(u.uploads) != 1 || u.creates[1]["input"] == nil || u.creates[1]["input_upload"] != nil {
		t.Errorf("a small body: %d uploads, create %v; want it inline", len(u.uploads), u.creates[1])
	}
}

// Upload refuses to send a body other than the size the link was signed
// for, rather than have the store refuse it.
func TestUploadRefusesALinkSignedForAnotherSize(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusCreated)
		_, _ = io.WriteString(w, `{"upload_id":"u1","url":"http://127.0.0.1:1/x","method":"PUT","headers":{"Content-Length":"3"},"expires_at":"2026-12-02T10:15:00Z"}`)
	}))
	t.Cleanup(srv.Close)
	c, _ := newClient(t, srv.URL, "tenant-a")
	if _, err := c.Upload(context.Background(), []byte(`{"messages":[]}`)); err == nil || !strings.Contains(err.Error(), "signed for 3 bytes") {
		t.Fatalf("Upload = %v, want the size refused", err)
	}
}
