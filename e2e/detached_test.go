package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/aijobs/aijobs/internal/awstest"
	"github.com/aijobs/aijobs/pkg/app"
	"github.com/aijobs/aijobs/pkg/config"
)

// slowResponses is an OpenAI Responses API in background mode whose
// generations each run for runFor: a create answers its id at once,
// polls see it in_progress until then, completed after (10 input and 5
// output tokens), and a cancel stops it.
type slowResponses struct {
	runFor  time.Duration
	mu      sync.Mutex
	started map[string]time.Time
	creates int
	polls   int
	cancels int
}

func (s *slowResponses) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	_, _ = io.Copy(io.Discard, r.Body)
	w.Header().Set("Content-Type", "application/json")
	s.mu.Lock()
	defer s.mu.Unlock()
	obj := func(id, status string) map[string]any {
		return map[string]any{"id": id, "object": "response", "status": status, "model": "test-model"}
	}
	id := strings.TrimSuffix(strings.TrimPrefix(r.URL.Path, "/responses/"), "/cancel")
	at, known := s.started[id]
	switch {
	case r.Method == http.MethodPost && r.URL.Path == "/responses":
		s.creates++
		id = fmt.Sprintf("resp_%d", s.creates)
		s.started[id] = time.Now()
		_ = json.NewEncoder(w).Encode(obj(id, "queued"))
	case !known:
		w.WriteHeader(http.StatusNotFound)
		_, _ = io.WriteString(w, `{"error":{"type":"invalid_request_error","code":"not_found"}}`)
	case r.Method == http.MethodGet && time.Since(at) < s.runFor:
		s.polls++
		_ = json.NewEncoder(w).Encode(obj(id, "in_progress"))
	case r.Method == http.MethodGet:
		s.polls++
		o := obj(id, "completed")
		o["output"] = []any{map[string]any{"type": "message", "role": "assistant",
			"content": []any{map[string]any{"type": "output_text", "text": "took its time"}}}}
		o["usage"] = map[string]any{"input_tokens": 10, "output_tokens": 5, "total_tokens": 15}
		_ = json.NewEncoder(w).Encode(o)
	default:
		s.cancels++
		_ = json.NewEncoder(w).Encode(obj(id, "cancelled"))
	}
}

func (s *slowResponses) counts() (creates, polls, cancels int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.creates, s.polls, s.cancels
}

// invocations counts the worker's invocations as the dev server's poller
// makes them: how many are open now, and how long all of them held a
// worker (the GB-seconds Lambda bills, over the memory size).
type invocations struct {
	mu   sync.Mutex
	open int
	held time.Duration
	n    int
}

func (c *invocations) wrap(h func(context.Context, events.SQSEvent) (events.SQSEventResponse, error)) func(context.Context, events.SQSEvent) (events.SQSEventResponse, error) {
	return func(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
		c.mu.Lock()
		c.open++
		c.n++
		c.mu.Unlock()
		began := time.Now()
		defer func() {
			c.mu.Lock()
			c.open--
			c.held += time.Since(began)
			c.mu.Unlock()
		}()
		return h(ctx, ev)
	}
}

func (c *invocations) now() (open, n int, held time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.open, c.n, c.held
}

// startCountedStack is a dev server whose configured providers run (the
// routes of overrides), its worker's invocations counted.
func startCountedStack(t *testing.T, overrides map[string]string) (*stack, *invocations) {
	t.Helper()
	env := testEnv(awstest.Prefix(t), awstest.Endpoint(t))
	for k, v := range overrides {
		env[k] = v
	}
	cfg, err := config.Load(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	a, err := app.New(ctx, cfg, app.Options{CreateResources: true})
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	inv := &invocations{}
	srv := a.DevServer()
	srv.Poller.Handler = inv.wrap(srv.Poller.Handler)
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("dev server: %v", err)
		}
	})
	return &stack{t: t, url: "http://" + ln.Addr().String(), app: a, client: apiClient(t)}, inv
}

// backgroundEnv runs one rung on the background server at url, detached
// or not, with a worker whose timeout holds an attached call of runFor
// and one message an invocation (so an invocation's time is one job's).
func backgroundEnv(url string, detached bool, runFor time.Duration) map[string]string {
	worker := runFor + 10*time.Second
	env := map[string]string{
		"AIJOBS_ROUTES": fmt.Sprintf(`{"providers": {"oa": {"kind": "openai", "base_url": %q, "background": true, "poll_every": "200ms"}},
		"routes": {"default": {"rungs": [{"provider": "oa", "model": "test-model", "price": {"input": "100", "output": "400"}, "max_tokens": 64,
		"timeout": %q, "detached": %t}]}}}`, url, (runFor + 5*time.Second).String(), detached),
		"AIJOBS_WORKER_TIMEOUT":     worker.String(),
		"AIJOBS_VISIBILITY_TIMEOUT": (6*worker + time.Second).String(),
		"AIJOBS_BATCH_SIZE":         "1",
	}
	for k, v := range steadyLease {
		env[k] = v
	}
	return env
}

// A detached route's worker starts the generation, records it and
// returns: while the provider generates (20 s), no invocation waits for
// it, only short reattaches look at it now and then; the job succeeds with
// one attempt and one generation, billed once (docs/resume.md, "Detached
// routes").
func TestADetachedRouteHoldsNoWorkerWhileItsGenerationRuns(t *testing.T) {
	t.Parallel()
	const runFor = 20 * time.Second
	model := &slowResponses{runFor: runFor, started: map[string]time.Time{}}
	srv := httptest.NewServer(model)
	defer srv.Close()
	s, inv := startCountedStack(t, backgroundEnv(srv.URL, true, runFor))
	id := s.submit("t", "detached", jobBody("take your time", ""))
	began := time.Now()
	for creates, _, _ := model.counts(); creates == 0; creates, _, _ = model.counts() {
		if time.Since(began) > 15*time.Second {
			t.Fatal("the generation never started")
		}
		time.Sleep(20 * time.Millisecond)
	}
	// Sample the open invocations while the generation runs.
	samples, busy := 0, 0
	for time.Since(began) < runFor-time.Second {
		if open, _, _ := inv.now(); open > 0 {
			busy++
		}
		samples++
		time.Sleep(50 * time.Millisecond)
	}
	_, n, held := inv.now()
	v := s.wait("t", id, 60*time.Second, "succeeded")
	creates, polls, cancels := model.counts()
	t.Logf("during the generation's %s: %d invocations held a worker %s in all; open at %d of %d samples; %d polls", runFor, n, held, busy, samples, polls)
	if creates != 1 || cancels != 0 || num(v, "attempts") != "1" || num(v, "cost_cents") != "0.003" || num(v, "reserved_cents") != "0" {
		t.Fatalf("creates %d cancels %d, job %v: want one generation, never cancelled, one attempt costing 0.003 cents, nothing held", creates, cancels, v)
	}
	// An attached worker holds the whole run; a detached one a few short
	// reattaches (about ten over 20 s, each a few store calls on kumo).
	if held > runFor/4 || busy > samples/4 {
		t.Fatalf("invocations held a worker %s, open at %d of %d samples: want well under the generation's %s", held, busy, samples, runFor)
	}
}

// The worker time a job holds, attached and detached, at calls of 2, 6
// and 24 s (standing for 10, 30 and 120 s, scaled down by five): an
// attached job holds a worker for its whole call; a detached one for its
// start and its reattaches, a number that grows with the log of the
// call's length (docs/resume.md, "Detached routes", where the figures
// are kept).
func TestDetachedWorkerTimeBarelyGrowsWithTheCall(t *testing.T) {
	t.Parallel()
	const jobs = 3
	held, took := map[string]time.Duration{}, map[string]time.Duration{}
	var mu sync.Mutex
	t.Run("runs", func(t *testing.T) {
		for _, runFor := range []time.Duration{2 * time.Second, 6 * time.Second, 24 * time.Second} {
			for _, detached := range []bool{false, true} {
				name := fmt.Sprintf("%s detached=%t", runFor, detached)
				t.Run(name, func(t *testing.T) {
					t.Parallel()
					model := &slowResponses{runFor: runFor, started: map[string]time.Time{}}
					srv := httptest.NewServer(model)
					defer srv.Close()
					s, inv := startCountedStack(t, backgroundEnv(srv.URL, detached, runFor))
					var ids []string
					began := time.Now()
					for i := range jobs {
						ids = append(ids, s.submit("t", fmt.Sprintf("k%d", i), jobBody("take your time", "")))
					}
					for _, id := range ids {
						if v := s.wait("t", id, runFor*2+60*time.Second, "succeeded"); num(v, "attempts") != "1" {
							t.Fatalf("attempts %v, want 1", v["attempts"])
						}
					}
					_, n, h := inv.now()
					all := time.Since(began)
					if creates, _, _ := model.counts(); creates != jobs {
						t.Fatalf("%d generations for %d jobs", creates, jobs)
					}
					t.Logf("%s: %d invocations, %.2f worker-seconds a job, all done in %s", name, n, h.Seconds()/jobs, all)
					mu.Lock()
					held[name], took[name] = h/jobs, all
					mu.Unlock()
				})
			}
		}
	})
	at := func(runFor string, detached bool) time.Duration {
		return held[fmt.Sprintf("%s detached=%t", runFor, detached)]
	}
	done := func(runFor string, detached bool) float64 {
		return took[fmt.Sprintf("%s detached=%t", runFor, detached)].Seconds()
	}
	table := "call (standing for) | worker-s a job attached | detached | all 3 done, attached | detached"
	for _, c := range []string{"2s", "6s", "24s"} {
		table += fmt.Sprintf("\n%s | %.2f | %.2f | %.1f s | %.1f s", c, at(c, false).Seconds(), at(c, true).Seconds(), done(c, false), done(c, true))
	}
	t.Log(table)
	if at("24s", true) == 0 || at("24s", true) > at("24s", false)/5 || at("24s", true) > at("2s", true)+2*time.Second {
		t.Fatalf("detached at 24 s holds %s a job (attached %s; detached at 2 s %s): want a fifth of the attached at most, and nearly flat",
			at("24s", true), at("24s", false), at("2s", true))
	}
}
