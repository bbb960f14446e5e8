package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/aijobs/aijobs/internal/awstest"
	"github.com/aijobs/aijobs/pkg/app"
	"github.com/aijobs/aijobs/pkg/config"
	"github.com/aijobs/aijobs/pkg/dynamodb"
	"github.com/aijobs/aijobs/pkg/job"
)

var (
	screenshots  = flag.Bool("console.screenshots", false, "write a screenshot of each console page to docs/")
	consoleScale = flag.Int("console.scale", 300, "jobs seeded for the console's load-time test (the closing note used 10000)")
)

// syncBuffer is a buffer the console's goroutine writes while the test reads.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// stack is the dev server (API, worker with the fake provider) and
// `aijobs console`, both on the emulator, and a headless Chromium.
type stack struct {
	store   *dynamodb.Store
	api     string
	console string
	// access is the URL the console opened, with a one-time code.
	access  string
	log     *syncBuffer
	browser context.Context
}

func startStack(t *testing.T) *stack {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	vars := map[string]string{"AWS_ENDPOINT_URL": awstest.Endpoint(t), "AWS_REGION": "us-east-1", "AIJOBS_PREFIX": awstest.Prefix(t),
		"AIJOBS_FAKE_LATENCY": "100ms", "AIJOBS_METRICS": "off"}
	getenv := func(k string) string { return vars[k] }
	cfg, err := config.Load(getenv)
	if err != nil {
		t.Fatal(err)
	}
	a, err := app.New(ctx, cfg, app.Options{CreateResources: true})
	if err != nil {
		t.Fatal(err)
	}
	vars["AIJOBS_QUEUE_URL"], vars["AIJOBS_DLQ_URL"] = a.Config.QueueURL, a.Config.DLQURL
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan struct{})
	go func() { defer close(served); _ = a.DevServer().Serve(ctx, ln) }()
	t.Cleanup(func() { cancel(); <-served })

	s := &stack{store: a.Store, api: "http://" + ln.Addr().String(), log: &syncBuffer{}}
	out := &syncBuffer{}
	opened := make(chan string, 1)
	e := &env{stdin: strings.NewReader(""), stdout: out, stderr: s.log, getenv: getenv, loadAWS: loadAWS,
		openURL: func(u string) error { opened <- u; return nil }}
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"console", "--listen", "127.0.0.1:0", "--refresh", "1s", "--open"}, e)
	}()
	t.Cleanup(func() { cancel(); <-done })
	select {
	case err := <-done:
		t.Fatalf("aijobs console ended: %v\n%s", err, s.log)
	case s.access = <-opened:
	case <-time.After(20 * time.Second):
		t.Fatalf("aijobs console opened no URL: %q %s", out, s.log)
	}
	if !strings.Contains(out.String(), "/?token=") || !strings.Contains(s.access, "/?code=") {
		t.Fatalf("the console opened %s and printed %q", s.access, out)
	}
	s.console = regexp.MustCompile(`^http://127\.0\.0\.1:\d+`).FindString(s.access)
	s.browser = browser(t)
	// The URL --open gave the browser: its visit sets the cookie every
	// page after it needs.
	s.open(t, strings.TrimPrefix(s.access, s.console), "main")
	return s
}

// browser is a headless Chromium (the Debian package; `make test`
// installs it when missing).
func browser(t *testing.T) context.Context {
	t.Helper()
	path := os.Getenv("CHROMIUM_BIN")
	if path == "" {
		var err error
		if path, err = exec.LookPath("chromium"); err != nil {
			t.Fatal("no chromium on PATH: run `make chromium` (make test does), or set CHROMIUM_BIN")
		}
	}
	// evil.example is TestConsoleAsksWhoYouAre's other site, served here.
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(path), chromedp.NoSandbox, chromedp.WindowSize(1280, 900),
		chromedp.Flag("host-resolver-rules", "MAP evil.example 127.0.0.1"))
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), opts...)
	bctx, cancelB := chromedp.NewContext(actx)
	t.Cleanup(func() { cancelB(); cancelA() })
	if err := chromedp.Do(bctx, chromedp.Navigate("about:blank")); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	return bctx
}

// submit creates a job through the API; content carries the fake
// provider's directives.
func (s *stack) submit(t *testing.T, tenant, key, content string, maxAttempts int) string {
	t.Helper()
	body := fmt.Sprintf(`{"input":{"messages":[{"role":"user","content":%q}],"max_tokens":16},"budget_cents":50,"max_attempts":%d}`, content, maxAttempts)
	req, _ := http.NewRequest(http.MethodPost, s.api+"/jobs", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+tenant)
	req.Header.Set("Idempotency-Key", key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var v struct {
		ID string `json:"id"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&v); err != nil || resp.StatusCode != http.StatusAccepted || v.ID == "" {
		t.Fatalf("submit %s: %d %v", key, resp.StatusCode, err)
	}
	return v.ID
}

// open loads a console page and waits for sel; it answers how long that took.
func (s *stack) open(t *testing.T, path, sel string) time.Duration {
	t.Helper()
	ctx, cancel := context.WithTimeout(s.browser, 30*time.Second)
	defer cancel()
	start := time.Now()
	if err := chromedp.Do(ctx, chromedp.Navigate(s.console+path), chromedp.WaitVisible(chromedp.CSS(sel))); err != nil {
		t.Fatalf("open %s, waiting for %s: %v\n%s", path, sel, err, s.log)
	}
	return time.Since(start)
}

func (s *stack) text(t *testing.T, sel string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(s.browser, 10*time.Second)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(sel)))
	if err != nil {
		t.Fatalf("text of %s: %v", sel, err)
	}
	return strings.TrimSpace(v)
}

func (s *stack) click(t *testing.T, sel, then string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(s.browser, 30*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(sel)), chromedp.WaitVisible(chromedp.CSS(then))); err != nil {
		t.Fatalf("click %s, waiting for %s: %v\n%s", sel, then, err, s.log)
	}
}

// until waits for the text of sel on the page at path to be want, reloading.
func (s *stack) until(t *testing.T, path, sel, want string) {
	t.Helper()
	deadline := time.Now().Add(45 * time.Second)
	for {
		s.open(t, path, sel)
		got := s.text(t, sel)
		if got == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s on %s is %q, want %q", sel, path, got, want)
		}
		time.Sleep(300 * time.Millisecond)
	}
}

// shot writes the page to docs/console-<name>.png with -console.screenshots.
func (s *stack) shot(t *testing.T, name string) {
	t.Helper()
	if !*screenshots {
		return
	}
	png, err := chromedp.Run(s.browser, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join("..", "..", "docs", "console-"+name+".png"), png, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestConsoleInABrowser is the console as an operator uses it, on the
// emulator with the real worker: jobs that failed (the fake provider fails
// their first call, overloaded, with one attempt each) are found from the
// overview's failures, a failure group is opened and one of its jobs read,
// the group is replayed after a dry run and its jobs succeed; a running
// job is cancelled from its page.
func TestConsoleInABrowser(t *testing.T) {
	s := startStack(t)
	var failed []string
	for i := range 3 {
		failed = append(failed, s.submit(t, "tenant-a", fmt.Sprint("flaky-", i), "Summarise the incident [[fake:fail=overloaded*1]]", 1))
	}
	for i := range 4 {
		s.submit(t, "tenant-b", fmt.Sprint("ok-", i), "Say hello", 3)
	}
	for _, id := range failed {
		s.until(t, "/jobs/"+id, "#state", "failed")
	}

	s.open(t, "/", "svg.chart")
	s.shot(t, "overview")
	if got := s.text(t, ".span table.grid td a"); got != "overloaded" {
		t.Fatalf("the overview's dearest failure class is %q", got)
	}

	s.open(t, "/failures", "#by-class")
	s.shot(t, "failures")
	s.click(t, `#by-class a[href*="class=overloaded"]`, "#group-jobs")
	s.shot(t, "failure-group")
	s.click(t, "#group-jobs tbody a", "#record")
	if got := s.text(t, "#state"); got != "failed" {
		t.Fatalf("the group's job is %q", got)
	}
	s.shot(t, "job")

	s.open(t, "/failures/jobs?class=overloaded&since=1h", "#replay-group")
	s.click(t, "#replay-group", "#dry-run")
	if got := s.text(t, `[data-outcome="replayed"]`); got != "3" {
		t.Fatalf("the dry run would replay %q jobs, want 3", got)
	}
	s.shot(t, "replay-dry-run")
	for _, id := range failed {
		s.open(t, "/jobs/"+id, "#state")
		if got := s.text(t, "#state"); got != "failed" {
			t.Fatalf("the dry run changed %s: %s", id, got)
		}
	}
	s.open(t, "/failures/jobs?class=overloaded&since=1h", "#replay-group")
	s.click(t, "#replay-group", "#confirm")
	s.click(t, "#confirm", "#replayed")
	if got := s.text(t, `[data-outcome="replayed"]`); got != "3" {
		t.Fatalf("replayed %q jobs, want 3", got)
	}
	for _, id := range failed {
		s.until(t, "/jobs/"+id, "#state", "succeeded")
	}

	// A call slower than the route's timeout: running until cancelled.
	slow := s.submit(t, "tenant-b", "slow", "Write a long report [[fake:latency=10m]]", 1)
	s.until(t, "/jobs/"+slow, "#state", "running")
	s.open(t, "/jobs/"+slow, "#cancel")
	s.click(t, "#cancel", "#done")
	if got := s.text(t, "#state"); got != "abandoned" {
		t.Fatalf("the cancelled job is %q", got)
	}
	s.open(t, "/jobs?tenant=tenant-b", "#jobs")
	s.shot(t, "jobs")
	log := s.log.String()
	for _, want := range []string{`action="replay dry run"`, "action=replay ", "action=cancel", "job=" + slow, "who=arn:aws:"} {
		if !strings.Contains(log, want) {
			t.Errorf("the action log lacks %q:\n%s", want, log)
		}
	}
}

// TestConsoleAsksWhoYouAre: a browser without the access token gets 401
// on every page; with it (the cookie the opened URL set), a page on
// another site, or on another port of this host, that makes the browser
// send the console an expensive GET gets nothing, and the console reads
// nothing for it.
func TestConsoleAsksWhoYouAre(t *testing.T) {
	s := startStack(t)
	stranger := browser(t)
	for _, path := range []string{"/", "/failures?since=100000h", "/static/console.css"} {
		ctx, cancel := context.WithTimeout(stranger, 30*time.Second)
		err := chromedp.Do(ctx, chromedp.Navigate(s.console+path))
		var body string
		if err == nil {
			body, err = chromedp.Run(ctx, chromedp.Evaluate[string](`document.body.innerText`))
		}
		cancel()
		if err != nil || !strings.Contains(body, `"status":401`) || !strings.Contains(body, "token_required") {
			t.Fatalf("%s without the token: %v %q", path, err, body)
		}
	}
	attack := fmt.Sprintf(`<html><body><img src="%[1]s/failures?since=100000h">
<script>fetch("%[1]s/failures?since=100000h&by=fetch", {mode: "no-cors", credentials: "include"}).finally(() => { document.title = "sent" })</script>
</body></html>`, s.console)
	page := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, attack)
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: page, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	port := ln.Addr().(*net.TCPAddr).Port
	for site, origin := range map[string]string{
		"cross-site": fmt.Sprintf("http://evil.example:%d/", port), // the browser resolves it to 127.0.0.1
		"same-site":  fmt.Sprintf("http://127.0.0.1:%d/", port),    // SameSite would send the cookie from here
	} {
		ctx, cancel := context.WithTimeout(s.browser, 30*time.Second)
		err := chromedp.Do(ctx, chromedp.Navigate(origin))
		if err == nil {
			_, err = chromedp.Run(ctx, chromedp.Poll[bool](`document.title == "sent"`))
		}
		cancel()
		if err != nil {
			t.Fatalf("the %s page: %v", site, err)
		}
		want := "code=cross_site_refused method=GET path=/failures fetch_site=" + site
		for deadline := time.Now().Add(10 * time.Second); strings.Count(s.log.String(), want) < 2; time.Sleep(50 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("the %s page's image and fetch were not both refused: %s", site, s.log)
			}
		}
	}
	// The operator's own session still works.
	s.open(t, "/failures", "main")
}

// TestConsoleLoadTimes seeds -console.scale jobs straight into the table
// and loads each page, logging how long each took and the AWS calls one
// overview refresh makes (from the console's own footer).
func TestConsoleLoadTimes(t *testing.T) {
	s := startStack(t)
	seed(t, s, *consoleScale)
	calls := regexp.MustCompile(`(\d+) AWS calls since start \(([^)]*)\)`)
	footer := func() (int, string) {
		m := calls.FindStringSubmatch(s.text(t, ".calls"))
		if m == nil {
			t.Fatal("no call count in the footer")
		}
		n, _ := strconv.Atoi(m[1])
		return n, m[2]
	}
	pages := []struct{ path, sel string }{
		{"/", "svg.chart"}, {"/failures", "#by-class"}, {"/failures/jobs?class=overloaded", "#group-jobs"},
		{"/jobs", "#jobs"}, {"/jobs?tenant=tenant-a", "#jobs"}, {"/jobs?state=failed", "#jobs"},
	}
	for _, p := range pages {
		took := s.open(t, p.path, p.sel)
		t.Logf("%d jobs: %s loaded in %s", *consoleScale, p.path, took.Round(time.Millisecond))
		if took > 30*time.Second {
			t.Errorf("%s took %s", p.path, took)
		}
	}
	time.Sleep(1100 * time.Millisecond) // past the cache
	s.open(t, "/", "svg.chart")
	before, _ := footer()
	time.Sleep(1100 * time.Millisecond)
	took := s.open(t, "/", "svg.chart")
	after, by := footer()
	t.Logf("%d jobs: one overview refresh took %s and %d AWS calls (the page's own footer counts itself too; totals: %s)",
		*consoleScale, took.Round(time.Millisecond), after-before, by)
	if after-before < 2 {
		t.Errorf("an overview refresh made %d AWS calls: it read nothing", after-before)
	}
}

// seed writes n jobs into the table through the store, 16 at a time:
// mostly succeeded, one in ten failed as overloaded (claimed and ended, so
// the failure index has them), one in ten queued, created over the last day.
func seed(t *testing.T, s *stack, n int) {
	t.Helper()
	ctx := context.Background()
	now := time.Now().UTC()
	start := time.Now()
	work := make(chan int)
	errs := make(chan error, 16)
	var wg sync.WaitGroup
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				if err := seedOne(ctx, s, i, n, now); err != nil {
					select {
					case errs <- err:
					default:
					}
				}
			}
		}()
	}
	for i := range n {
		work <- i
	}
	close(work)
	wg.Wait()
	select {
	case err := <-errs:
		t.Fatal(err)
	default:
	}
	t.Logf("seeded %d jobs in %s", n, time.Since(start).Round(time.Millisecond))
}

func seedOne(ctx context.Context, s *stack, i, n int, now time.Time) error {
	created := job.Millis(now.Add(-time.Duration(i) * 24 * time.Hour / time.Duration(n)))
	tenant := fmt.Sprint("tenant-", "abcd"[i%4:i%4+1])
	key := fmt.Sprint("seed-", i)
	j := job.Job{ID: job.NewID(tenant, key), Tenant: tenant, RequestKey: key, InputHash: fmt.Sprintf("sha256:%04d", i%37), Model: "default",
		Input: json.RawMessage(`{"messages":[{"role":"user","content":"seeded"}],"max_tokens":16}`), State: job.Queued,
		MaxAttempts: 1, Budget: job.Cents(5), Reserve: 1000, Deadline: now.Add(time.Hour), Version: 1, CreatedAt: created, UpdatedAt: created,
		ExpiresAt: now.Add(48 * time.Hour)}
	switch i % 10 {
	case 0:
		if _, err := s.store.Create(ctx, j); err != nil {
			return err
		}
		if _, err := s.store.Claim(ctx, job.Claim{ID: j.ID, Owner: "seed", Now: created, LeaseUntil: created.Add(time.Minute)}); err != nil {
			return err
		}
		_, err := s.store.End(ctx, job.End{ID: j.ID, Owner: "seed", Now: created.Add(time.Second), Settlement: job.Settlement{Cost: job.Nanocents(1000 + i), Held: 1000},
			Class: job.Overloaded, ExpiresAt: now.Add(48 * time.Hour)})
		return err
	case 1:
		j.Deadline = now.Add(24 * time.Hour) // queued; the worker may take it
	default:
		j.State, j.Attempts, j.Cost, j.Result, j.ResultModel, j.Progress = job.Succeeded, 1, 700, json.RawMessage(`{"output":"ok"}`), "fake/fake", 1
	}
	_, err := s.store.Create(ctx, j)
	return err
}
