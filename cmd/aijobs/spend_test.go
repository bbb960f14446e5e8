package main

import (
	"context"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/aijobs/aijobs/internal/awstest"
	"github.com/aijobs/aijobs/pkg/app"
	"github.com/aijobs/aijobs/pkg/awsclient"
	"github.com/aijobs/aijobs/pkg/client"
	"github.com/aijobs/aijobs/pkg/client/clienttest"
	"github.com/aijobs/aijobs/pkg/config"
	"github.com/aijobs/aijobs/pkg/dynamodb"
	"github.com/aijobs/aijobs/pkg/job"
)

// aijobs spend shows the caller's periods: limit, spent, held, what is
// left and the period's end; a tenant with no limit is told so.
func TestSpend(t *testing.T) {
	srv := clienttest.Start(t)
	ctx := context.Background()
	h := job.SpendHold{Tenant: clienttest.Tenant("spender"), Period: job.Day, At: clienttest.T0, Limit: clienttest.SpenderLimit, Entry: "x@1", Amount: 30 * job.NanosPerCent}
	if ok, err := srv.Spend.Hold(ctx, h); !ok || err != nil {
		t.Fatal(ok, err)
	}
	if err := srv.Spend.Settle(ctx, job.SpendSettle{SpendHold: h, Cost: 12 * job.NanosPerCent}); err != nil {
		t.Fatal(err)
	}
	h.Entry, h.Amount = "y@1", 5*job.NanosPerCent
	if ok, err := srv.Spend.Hold(ctx, h); !ok || err != nil {
		t.Fatal(ok, err)
	}
	env := map[string]string{"AIJOBS_ENDPOINT": srv.URL, "AIJOBS_TOKEN": "spender"}
	r := invocation{env: env, args: args("spend", "--output", "table")}.run(t)
	want := "PERIOD  LIMIT_CENTS  SPENT_CENTS  HELD_CENTS  REMAINING_CENTS  ENDS\n" +
		"day     100          12           5           83               2026-12-03T00:00:00.000Z\n"
	if r.code != 0 || r.stdout != want {
		t.Errorf("spend: exit %d, stdout\n%s\nwant\n%s%s", r.code, r.stdout, want, r.stderr)
	}
	r = invocation{env: env, args: args("spend")}.run(t)
	var s client.Spend
	if err := jsonUnmarshal(r.stdout, &s); err != nil || len(s.Periods) != 1 || s.Periods[0].RemainingCents != 83*job.NanosPerCent {
		t.Errorf("spend as JSON: %q, %v", r.stdout, err)
	}
	env["AIJOBS_TOKEN"] = "tenant-a"
	if r := (invocation{env: env, args: args("spend", "--output", "table")}.run(t)); r.code != 0 || r.stdout != "no spend limit: nothing to show\n" {
		t.Errorf("no limit: exit %d, %q", r.code, r.stdout)
	}
}

// The console's Spend page on the emulator: the limits from the same
// AIJOBS_TENANT_SPEND the functions read, the balance from the buckets
// table the workers write, a tenant the limits name shown with what it
// spent and holds.
func TestConsoleSpendPageOnTheEmulator(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	vars := map[string]string{"AWS_ENDPOINT_URL": awstest.Endpoint(t), "AWS_REGION": "us-east-1", "AIJOBS_PREFIX": awstest.Prefix(t),
		"AIJOBS_METRICS": "off", "AIJOBS_TENANT_SPEND": "day=$1,jwt:tenant-z=day:$2+month:$30"}
	cfg, err := config.Load(func(k string) string { return vars[k] })
	if err != nil {
		t.Fatal(err)
	}
	a, err := app.New(ctx, cfg, app.Options{CreateResources: true})
	if err != nil {
		t.Fatal(err)
	}
	vars["AIJOBS_QUEUE_URL"], vars["AIJOBS_DLQ_URL"] = a.Config.QueueURL, a.Config.DLQURL
	spend := dynamodb.NewSpend(awsclient.DynamoDB(awstest.Config(t, nil)), a.Config.BucketsTable)
	h := job.SpendHold{Tenant: "jwt:tenant-z", Period: job.Day, At: time.Now(), Limit: job.Cents(200), Entry: "j@1", Amount: job.Cents(50)}
	if ok, err := spend.Hold(ctx, h); !ok || err != nil {
		t.Fatal(ok, err)
	}
	if err := spend.Settle(ctx, job.SpendSettle{SpendHold: h, Cost: job.Cents(30)}); err != nil {
		t.Fatal(err)
	}
	out, log := &syncBuffer{}, &syncBuffer{}
	e := &env{stdin: strings.NewReader(""), stdout: out, stderr: log, getenv: func(k string) string { return vars[k] }, loadAWS: loadAWS,
		openURL: func(string) error { return nil }}
	done := make(chan error, 1)
	go func() { done <- run(ctx, []string{"console", "--listen", "127.0.0.1:0"}, e) }()
	t.Cleanup(func() { cancel(); <-done })
	url := ""
	for deadline := time.Now().Add(20 * time.Second); url == "" && time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		url = regexp.MustCompile(`http://127\.0\.0\.1:\d+/\?token=[0-9a-f]+`).FindString(out.String())
	}
	if url == "" {
		t.Fatalf("the console printed no URL: %q %s", out, log)
	}
	base, token, _ := strings.Cut(url, "/?token=")
	req, _ := http.NewRequest(http.MethodGet, base+"/spend", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	body := string(b)
	for _, want := range []string{
		`<tr data-tenant="jwt:tenant-z" data-period="day"><td><a href="/jobs?tenant=jwt%3atenant-z">jwt:tenant-z</a></td><td>day</td><td class="n">200</td><td class="n">30</td><td class="n">0</td><td class="n">170</td><td class="n">15%</td>`,
		`<tr data-tenant="jwt:tenant-z" data-period="month">`,
	} {
		if resp.StatusCode != http.StatusOK || !strings.Contains(body, want) {
			t.Fatalf("GET /spend: %d, lacks %s:\n%s\n%s", resp.StatusCode, want, body, log)
		}
	}
}
