package bench

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"time"
)

// receiver is the callback target of a run with callbacks: plain HTTP on
// loopback, which the dev server admits with
// AIJOBS_CALLBACK_ALLOW_LOOPBACK (docs/webhooks.md). It answers every
// delivery 204 at once and counts the distinct webhook-ids (one per job
// and state delivered), so the run can wait for every job's callback.
type receiver struct {
	url  string
	srv  *http.Server
	mu   sync.Mutex
	seen map[string]bool
	reqs int
}

func startReceiver() (*receiver, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("callback receiver: %w", err)
	}
	r := &receiver{url: "http://" + ln.Addr().String() + "/hook", seen: map[string]bool{}}
	r.srv = &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		_, _ = io.Copy(io.Discard, req.Body)
		r.mu.Lock()
		r.reqs++
		r.seen[req.Header.Get("webhook-id")] = true
		r.mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	})}
	go func() { _ = r.srv.Serve(ln) }()
	return r, nil
}

// delivered is how many distinct deliveries and requests arrived.
func (r *receiver) delivered() (ids, requests int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.seen), r.reqs
}

// wait waits until n distinct deliveries arrived or d passed.
func (r *receiver) wait(n int, d time.Duration) {
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		if ids, _ := r.delivered(); ids >= n {
			return
		}
	}
}

func (r *receiver) stop() {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_ = r.srv.Shutdown(ctx)
}
