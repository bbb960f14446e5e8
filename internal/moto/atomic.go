package moto

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"time"
)

// Front serves moto's API on a loopback port of its own and hands moto
// the writes to any one DynamoDB item one at a time.
//
// DynamoDB applies each write atomically against the item's latest
// version (AWS DynamoDB Developer Guide, "Best practices for handling
// concurrent updates in DynamoDB"). moto 5.2 does not under its threaded
// server: two racing conditional UpdateItems on one item are both applied
// (TestConditionalUpdateItemIsNotAtomic). With one item's writes taken one
// at a time, moto keeps that guarantee, so the tests that rest on it run
// on moto too; the reproductions in gaps_test.go talk to moto itself and
// still show the gap.
//
// Only one item's writes wait for each other. A lock over all writes was
// tried first: moto is one Python process whose threads share its CPU, and
// with every write behind one lock the writes' share fell so far that
// under the end-to-end suite's 2,000-job test creates, claims and
// heartbeats timed out by the hundred (it passes on moto alone). Reads and
// every other service's requests (an SQS long poll above all) pass at
// once. Writes to different items still race moto's stream: two can share
// a stream sequence number (TestConcurrentWritesShareAStreamSequenceNumber),
// which the front leaves as it is.
type Front struct {
	// Endpoint is the front's URL, for AWS_ENDPOINT_URL.
	Endpoint string
	srv      *http.Server
	done     chan struct{}

	moto   *url.URL
	client *http.Client
	mu     sync.Mutex
	items  map[string]*itemLock
	keys   map[string][]string // table: its key attributes' names
	whole  sync.RWMutex        // a write the front cannot place takes it alone
	proxy  *httputil.ReverseProxy
}

// itemLock is one item's write lock and how many hold or wait for it.
type itemLock struct {
	sync.Mutex
	users int
}

// dynamoWrite starts the X-Amz-Target of every DynamoDB action; the
// writes among them are named in itemWrites, or take the front alone.
const dynamoWrite = "DynamoDB_20120810."

// Atomic starts a Front for p.
func (p *Process) Atomic() (*Front, error) {
	target, err := url.Parse(p.Endpoint)
	if err != nil {
		return nil, fmt.Errorf("moto endpoint: %w", err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("free port: %w", err)
	}
	// Connections to moto are kept and reused: a new one costs moto a
	// thread, and a write would pay for it inside its lock.
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConns, t.MaxIdleConnsPerHost = 256, 256
	// The incoming Host is kept: the queue URLs moto builds from it then
	// name the front, and every later call comes back through it.
	proxy := httputil.NewSingleHostReverseProxy(target)
	proxy.Transport = t
	// A request its caller gave up on (a heartbeat stopped at the finish)
	// is answered 502 to no one, and not logged.
	proxy.ErrorHandler = func(w http.ResponseWriter, _ *http.Request, _ error) { w.WriteHeader(http.StatusBadGateway) }
	f := &Front{Endpoint: "http://" + l.Addr().String(), done: make(chan struct{}), moto: target,
		client: &http.Client{Transport: t, Timeout: 30 * time.Second}, items: map[string]*itemLock{}, keys: map[string][]string{},
		proxy: proxy}
	f.srv = &http.Server{Handler: http.HandlerFunc(f.serve), ReadHeaderTimeout: 10 * time.Second}
	go func() {
		defer close(f.done)
		if err := f.srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
			fmt.Printf("moto front: %v\n", err)
		}
	}()
	return f, nil
}

// serve passes r to moto, a write to one item after the item's other
// writes.
func (f *Front) serve(w http.ResponseWriter, r *http.Request) {
	action, ok := strings.CutPrefix(r.Header.Get("X-Amz-Target"), dynamoWrite)
	if !ok || !writes(action) {
		f.proxy.ServeHTTP(w, r)
		return
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	item, ok := f.item(r, action, body)
	if !ok {
		f.whole.Lock()
		defer f.whole.Unlock()
		f.proxy.ServeHTTP(w, r)
		return
	}
	f.whole.RLock()
	defer f.whole.RUnlock()
	unlock := f.lock(item)
	defer unlock()
	f.proxy.ServeHTTP(w, r)
}

// writes reports whether a DynamoDB action writes items.
func writes(action string) bool {
	switch action {
	case "PutItem", "UpdateItem", "DeleteItem", "BatchWriteItem", "TransactWriteItems":
		return true
	}
	return false
}

// item names the one item a write changes: its table and its key as JSON
// (encoding/json sorts a map's keys, so one key is always one name).
func (f *Front) item(r *http.Request, action string, body []byte) (string, bool) {
	var in struct {
		TableName string
		Key, Item map[string]json.RawMessage
	}
	if json.Unmarshal(body, &in) != nil || in.TableName == "" {
		return "", false
	}
	key := in.Key
	if action == "PutItem" {
		names, ok := f.keyOf(r, in.TableName)
		if !ok {
			return "", false
		}
		key = map[string]json.RawMessage{}
		for _, n := range names {
			key[n] = in.Item[n]
		}
	}
	if action != "PutItem" && action != "UpdateItem" && action != "DeleteItem" || len(key) == 0 {
		return "", false
	}
	b, err := json.Marshal(key)
	if err != nil {
		return "", false
	}
	return in.TableName + "\x00" + string(b), true
}

// keyOf is table's key attributes' names, asked of moto once (a PutItem
// carries the whole item, not which of its attributes are the key).
func (f *Front) keyOf(r *http.Request, table string) ([]string, bool) {
	f.mu.Lock()
	names, ok := f.keys[table]
	f.mu.Unlock()
	if ok {
		return names, true
	}
	body, _ := json.Marshal(map[string]string{"TableName": table})
	req, err := http.NewRequestWithContext(r.Context(), http.MethodPost, f.moto.String()+"/", bytes.NewReader(body))
	if err != nil {
		return nil, false
	}
	// The caller's own headers (moto reads the region from its
	// Authorization), asking another action.
	req.Header = r.Header.Clone()
	req.Header.Set("X-Amz-Target", dynamoWrite+"DescribeTable")
	req.Header.Del("Content-Length")
	resp, err := f.client.Do(req)
	if err != nil {
		return nil, false
	}
	defer resp.Body.Close()
	var out struct {
		Table struct {
			KeySchema []struct{ AttributeName string }
		}
	}
	if resp.StatusCode != http.StatusOK || json.NewDecoder(resp.Body).Decode(&out) != nil || len(out.Table.KeySchema) == 0 {
		return nil, false
	}
	for _, k := range out.Table.KeySchema {
		names = append(names, k.AttributeName)
	}
	f.mu.Lock()
	f.keys[table] = names
	f.mu.Unlock()
	return names, true
}

// lock takes item's write lock and answers its release; a lock no one
// holds or waits for is dropped.
func (f *Front) lock(item string) func() {
	f.mu.Lock()
	l := f.items[item]
	if l == nil {
		l = &itemLock{}
		f.items[item] = l
	}
	l.users++
	f.mu.Unlock()
	l.Lock()
	return func() {
		l.Unlock()
		f.mu.Lock()
		if l.users--; l.users == 0 {
			delete(f.items, item)
		}
		f.mu.Unlock()
	}
}

// Stop closes the front.
func (f *Front) Stop() {
	if f == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = f.srv.Shutdown(ctx)
	<-f.done
}
