// Package quota is a front for an emulator's DynamoDB: a loopback reverse
// proxy that holds the emulator to the quotas of a real account, which
// kumo and moto do not keep. It refuses an item over 400 KB, meters the
// read and write units every request consumes from the sizes of the
// items it reads and writes, and throttles a partition key value (of the
// table or of an index) past a set number of units a second, answering
// as DynamoDB does; and it caps the messages in flight on an SQS queue as
// SQS does. docs/testing.md, "The quota front", says what it enforces,
// what it does not, and its sources.
package quota

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

// dynamoTarget starts the X-Amz-Target of every DynamoDB action.
const dynamoTarget = "DynamoDB_20120810."

// Front serves an emulator's API on a loopback port of its own, every
// DynamoDB item request held to Limits and metered on Meter, and every
// SQS receive held to Limits.InFlight.
type Front struct {
	// Endpoint is the front's URL, for AWS_ENDPOINT_URL.
	Endpoint string
	// Meter holds what the requests through the front consumed.
	Meter *Meter

	limits Limits
	srv    *http.Server
	done   chan struct{}
	target *url.URL
	client *http.Client
	proxy  *httputil.ReverseProxy

	mu     sync.Mutex
	tables map[string]*schema
	items  map[string]*itemLock
}

// itemLock is one item's write lock and how many hold or wait for it.
type itemLock struct {
	sync.Mutex
	users int
}

// Start runs a front for the emulator at endpoint.
func Start(endpoint string, limits Limits) (*Front, error) {
	target, err := url.Parse(endpoint)
	if err != nil {
		return nil, fmt.Errorf("emulator endpoint: %w", err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("free port: %w", err)
	}
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConns, t.MaxIdleConnsPerHost = 256, 256
	// The incoming Host is kept (as moto.Front does): the queue URLs the
	// emulator builds from it then name the front.
	proxy := httputil.NewSingleHostReverseProxy(target)
	proxy.Transport = t
	proxy.ErrorHandler = func(w http.ResponseWriter, _ *http.Request, _ error) { w.WriteHeader(http.StatusBadGateway) }
	f := &Front{Endpoint: "http://" + l.Addr().String(), Meter: newMeter(limits), limits: limits.withDefaults(),
		done: make(chan struct{}), target: target, client: &http.Client{Transport: t, Timeout: 30 * time.Second},
		proxy: proxy, tables: map[string]*schema{}, items: map[string]*itemLock{}}
	f.srv = &http.Server{Handler: http.HandlerFunc(f.serve), ReadHeaderTimeout: 10 * time.Second}
	go func() {
		defer close(f.done)
		if err := f.srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
			fmt.Printf("quota front: %v\n", err)
		}
	}()
	return f, nil
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

// serve holds a DynamoDB item request and an SQS receive to the quotas
// and passes every other request (another action, another service) on as
// it is.
func (f *Front) serve(w http.ResponseWriter, r *http.Request) {
	target := r.Header.Get("X-Amz-Target")
	action, ok := strings.CutPrefix(target, dynamoTarget)
	if target == sqsTarget+"ReceiveMessage" && f.limits.InFlight > 0 {
		f.receive(w, r)
		return
	}
	if !ok {
		f.proxy.ServeHTTP(w, r)
		return
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	c := &call{f: f, r: r, service: dynamoTarget, action: action, body: body}
	// Every DynamoDB answer is read whole before it is sent on, the ones
	// the front does not measure too: through httputil.ReverseProxy one
	// DescribeTable of the store's suite came back cut short (its
	// connection to kumo closed mid-body), a 200 the SDK could not read;
	// read whole, such a failure is a 500, which the SDK retries.
	handle := handlers[action]
	if handle == nil {
		handle = (*call).pass
	}
	handle(c).write(w)
}

// handlers are the actions the front measures, by name; every other
// action passes.
var handlers = map[string]func(*call) answer{
	"GetItem":            (*call).getItem,
	"BatchGetItem":       (*call).batchGetItem,
	"TransactGetItems":   (*call).transactGetItems,
	"Query":              (*call).query,
	"Scan":               (*call).scan,
	"PutItem":            (*call).write,
	"UpdateItem":         (*call).write,
	"DeleteItem":         (*call).write,
	"BatchWriteItem":     (*call).write,
	"TransactWriteItems": (*call).write,
}

// call is one request the front measures.
type call struct {
	f       *Front
	r       *http.Request
	service string // its X-Amz-Target's prefix: dynamoTarget or sqsTarget
	action  string
	body    []byte
}

// answer is what the front sends back: the emulator's, or its own refusal.
type answer struct {
	status int
	header http.Header
	body   []byte
}

func (a answer) write(w http.ResponseWriter) {
	for k, vs := range a.header {
		if k == "Content-Length" {
			continue
		}
		for _, v := range vs {
			w.Header().Add(k, v)
		}
	}
	w.WriteHeader(a.status)
	_, _ = w.Write(a.body)
}

// forward passes the caller's request to the emulator.
func (c *call) forward() (answer, error) {
	return c.send(c.action, c.body)
}

// ask sends the emulator an action of the front's own (a GetItem to
// measure an item, DescribeTable), with the caller's headers: the
// emulator reads the region from its Authorization.
func (c *call) ask(action string, in any) (answer, error) {
	body, err := json.Marshal(in)
	if err != nil {
		return answer{}, err
	}
	return c.send(action, body)
}

func (c *call) send(action string, body []byte) (answer, error) {
	req, err := http.NewRequestWithContext(c.r.Context(), http.MethodPost, c.f.target.String()+"/", bytes.NewReader(body))
	if err != nil {
		return answer{}, err
	}
	req.Header = c.r.Header.Clone()
	req.Header.Set("X-Amz-Target", c.service+action)
	req.Header.Del("Content-Length")
	req.Header.Del("Accept-Encoding") // the body is read here, so plain
	resp, err := c.f.client.Do(req)
	if err != nil {
		return answer{}, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return answer{}, err
	}
	return answer{status: resp.StatusCode, header: resp.Header, body: b}, nil
}

// failed answers an error of the front's own reaching the emulator: a
// 500, which the SDK retries, as DynamoDB's own InternalServerError.
func failed(err error) answer {
	return refusal(http.StatusInternalServerError, "InternalServerError", "quota front: "+err.Error(), nil)
}

// refusal is an error answer in DynamoDB's JSON 1.0 shape; extra adds
// members (a throttle's reasons).
func refusal(status int, code, message string, extra map[string]any) answer {
	body := map[string]any{"__type": "com.amazonaws.dynamodb.v20120810#" + code, "message": message}
	for k, v := range extra {
		body[k] = v
	}
	b, _ := json.Marshal(body)
	h := http.Header{}
	h.Set("Content-Type", "application/x-amz-json-1.0")
	return answer{status: status, header: h, body: b}
}

// lock takes the write locks of ids (sortedIDs's order) and answers
// their release. DynamoDB applies one item's writes one at a time, and
// the before and after the front reads around a write must be that
// write's, so one item's writes through the front wait for each other.
func (f *Front) lock(ids []string) func() {
	var held []*itemLock
	for _, id := range sortedIDs(ids) {
		f.mu.Lock()
		l := f.items[id]
		if l == nil {
			l = &itemLock{}
			f.items[id] = l
		}
		l.users++
		f.mu.Unlock()
		l.Lock()
		held = append(held, l)
	}
	return func() {
		for i, id := range sortedIDs(ids) {
			held[i].Unlock()
			f.mu.Lock()
			if held[i].users--; held[i].users == 0 {
				delete(f.items, id)
			}
			f.mu.Unlock()
		}
	}
}
