package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/aijobs/aijobs/internal/awstest"
	"github.com/aijobs/aijobs/pkg/awsclient"
	"github.com/aijobs/aijobs/pkg/client/clienttest"
	"github.com/aijobs/aijobs/pkg/config"
	"github.com/aijobs/aijobs/pkg/dynamodb"
	"github.com/aijobs/aijobs/pkg/job"
	"github.com/aijobs/aijobs/pkg/settings"
	"github.com/aijobs/aijobs/pkg/sqs"
)

func TestMain(m *testing.M) { os.Exit(awstest.Main(m)) }

// operatorEnv creates a table and queues on the emulator and returns the
// environment the operator commands read, plus the store over that table.
func operatorEnv(t *testing.T) (map[string]string, *dynamodb.Store) {
	t.Helper()
	ctx := context.Background()
	s := settings.Defaults()
	s.Prefix = awstest.Prefix(t)
	awsCfg := awstest.Config(t, nil)
	ddb := awsclient.DynamoDB(awsCfg)
	if err := dynamodb.CreateTable(ctx, ddb, s.TableName(), s); err != nil {
		t.Fatal(err)
	}
	q, dlq, err := sqs.CreateQueues(ctx, awsclient.SQS(awsCfg), s)
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"AWS_ENDPOINT_URL": awstest.Endpoint(t), "AWS_REGION": "us-east-1", "AIJOBS_PREFIX": s.Prefix,
		"AIJOBS_QUEUE_URL": q, "AIJOBS_DLQ_URL": dlq}
	return env, dynamodb.New(ddb, s.TableName(), s)
}

// endJob creates a job and ends it with class at ended, having cost cost
// and saved half as much (its calls ran in a cheaper lane).
// Its expiry is a day from the real clock, not the invocation's: kumo's
// TTL reaper (every 30 s) deletes an item whose expiry has passed, and
// one that ran between two commands of a test emptied the second report.
func endJob(t *testing.T, st *dynamodb.Store, key, hash string, class job.ErrorClass, cost job.Nanocents, ended time.Time) string {
	t.Helper()
	ctx := context.Background()
	created, keep := ended.Add(-time.Minute), time.Now().Add(24*time.Hour)
	j := job.Job{ID: job.NewID("t", key), Tenant: "t", RequestKey: key, InputHash: hash, Model: "default",
		Input: json.RawMessage(`{"messages":[{"role":"user","content":"x"}]}`), State: job.Queued, MaxAttempts: 1,
		Budget: job.Cents(1), Reserve: 10, Deadline: created.Add(time.Hour), Version: 1, CreatedAt: created, UpdatedAt: created}
	if _, err := st.Create(ctx, j); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Claim(ctx, job.Claim{ID: j.ID, Owner: "w", Now: ended.Add(-time.Second), LeaseUntil: ended.Add(time.Minute)}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.End(ctx, job.End{ID: j.ID, Owner: "w", Now: ended, Settlement: job.Settlement{Cost: cost, Held: 10, Saved: cost / 2}, Class: class, ExpiresAt: keep}); err != nil {
		t.Fatal(err)
	}
	return j.ID
}

func TestFailuresTotalsAndReplayDryRunOnTheEmulator(t *testing.T) {
	env, st := operatorEnv(t)
	now := clienttest.T0 // the invocation's clock
	endJob(t, st, "a1", "sha256:aaa", job.Overloaded, 100, now.Add(-50*time.Minute))
	endJob(t, st, "a2", "sha256:aaa", job.Overloaded, 250, now.Add(-40*time.Minute))
	endJob(t, st, "a3", "sha256:aaa", job.ContextLengthExceeded, 7, now.Add(-30*time.Minute))
	endJob(t, st, "b1", "sha256:bbb", job.ContentFiltered, 1_000_000_001, now.Add(-20*time.Minute))
	endJob(t, st, "old", "sha256:aaa", job.Overloaded, 5000, now.Add(-3*time.Hour)) // outside the hour

	res := invocation{args: args("failures", "--since", "1h", "--jobs", "--output", "json"), env: env}.run(t)
	if res.code != 0 {
		t.Fatalf("exit %d: %s", res.code, res.stderr)
	}
	var r failuresReport
	if err := json.Unmarshal([]byte(res.stdout), &r); err != nil {
		t.Fatal(err)
	}
	wantClass := []total{{Key: "content_filtered", Jobs: 1, Cost: 1_000_000_001, Saved: 500_000_000}, {Key: "overloaded", Jobs: 2, Cost: 350, Saved: 175},
		{Key: "context_length_exceeded", Jobs: 1, Cost: 7, Saved: 3}}
	wantInput := []total{{Key: "sha256:bbb", Jobs: 1, Cost: 1_000_000_001, Saved: 500_000_000, Classes: []job.ErrorClass{job.ContentFiltered}},
		{Key: "sha256:aaa", Jobs: 3, Cost: 357, Saved: 178, Classes: []job.ErrorClass{job.ContextLengthExceeded, job.Overloaded}}}
	var rows job.Nanocents // each job's own saving, as --jobs lists it
	for _, f := range r.Failures {
		rows += f.Saved
	}
	if r.Jobs != 4 || r.Cost != 1_000_000_358 || r.Saved != 500_000_178 || rows != r.Saved || !sameTotals(r.ByClass, wantClass) || !sameTotals(r.ByInput, wantInput) || len(r.Failures) != 4 {
		t.Fatalf("report %+v", r)
	}
	if res := (invocation{args: args("failures", "--since", "1h", "--class", "overloaded", "--output", "json"), env: env}).run(t); res.code != 0 ||
		!jsonHas(t, res.stdout, `"jobs":2,"cost_cents":0.00000035,`) {
		t.Fatalf("by class: %d %s %s", res.code, res.stdout, res.stderr)
	}

	// A dry run of a replay of the same hour decides, and changes nothing.
	res = invocation{args: args("replay", "--from", "failures", "--since", "1h", "--dry-run", "--output", "json"), env: env}.run(t)
	if res.code != 0 {
		t.Fatalf("replay exit %d: %s", res.code, res.stderr)
	}
	var rr replayReport
	// b1 spent more than its whole budget: not one more attempt fits.
	if err := json.Unmarshal([]byte(res.stdout), &rr); err != nil || !rr.DryRun || rr.Total != 4 || rr.Outcomes["replayed"] != 3 || rr.Outcomes["refused_budget"] != 1 {
		t.Fatalf("dry run: %s %v", res.stdout, err)
	}
	if j, _ := st.Get(context.Background(), job.NewID("t", "a1")); j.State != job.Failed || j.Replays != 0 {
		t.Fatalf("a dry run changed a job: %+v", j)
	}
	// The real one replays the three that can afford an attempt.
	res = invocation{args: args("replay", "--from", "failures", "--since", "1h", "--output", "json"), env: env}.run(t)
	if err := json.Unmarshal([]byte(res.stdout), &rr); err != nil || res.code != 0 || rr.Outcomes["replayed"] != 3 || rr.Outcomes["refused_budget"] != 1 {
		t.Fatalf("replay: %d %s %s", res.code, res.stdout, res.stderr)
	}
	if j, _ := st.Get(context.Background(), job.NewID("t", "a1")); j.State != job.Queued || j.Replays != 1 {
		t.Fatalf("replayed job: %+v", j)
	}
	// Without queue URLs, replay finds the queues by the prefix; with a
	// prefix that names none, it is a configuration error.
	delete(env, "AIJOBS_QUEUE_URL")
	delete(env, "AIJOBS_DLQ_URL")
	if res := (invocation{args: args("replay", "--from", "dlq", "--output", "json"), env: env}).run(t); res.code != 0 {
		t.Fatalf("queues by prefix: exit %d %s", res.code, res.stderr)
	}
	env["AIJOBS_TABLE"], env["AIJOBS_PREFIX"] = env["AIJOBS_PREFIX"]+"-jobs", "nosuch"
	if res := (invocation{args: args("replay", "--from", "dlq"), env: env}).run(t); res.code != exitUsage || !strings.Contains(res.stderr, "AIJOBS_PREFIX") {
		t.Fatalf("no queue: exit %d %s", res.code, res.stderr)
	}
}

// TestTheDevBannerLinePointsTheCommandsAtItsTable: the line the dev
// server prints (config.OperatorExports), and nothing else, is enough for
// failures and replay to reach its table and queues.
func TestTheDevBannerLinePointsTheCommandsAtItsTable(t *testing.T) {
	env, st := operatorEnv(t)
	endJob(t, st, "a1", "sha256:aaa", job.Overloaded, 100, clienttest.T0.Add(-time.Minute))
	line := config.OperatorExports(config.Config{Endpoint: env["AWS_ENDPOINT_URL"], Region: env["AWS_REGION"],
		Table: env["AIJOBS_PREFIX"] + "-jobs", QueueURL: env["AIJOBS_QUEUE_URL"], DLQURL: env["AIJOBS_DLQ_URL"]})
	exported := map[string]string{}
	for _, kv := range strings.Fields(strings.TrimPrefix(line, "export ")) {
		k, v, _ := strings.Cut(kv, "=")
		exported[k] = v
	}
	// The failure index, like every DynamoDB GSI, is read eventually
	// consistent (DynamoDB developer guide, "Using Global Secondary
	// Indexes": "queries on global secondary indexes support eventual
	// consistency only"); under load the emulator's index lagged the
	// write once, so the read is given a few seconds to see it.
	res := invocation{args: args("failures", "--since", "1h", "--output", "json"), env: exported}.run(t)
	for wait := time.Now().Add(5 * time.Second); res.code == 0 && !strings.Contains(res.stdout, `"overloaded"`) && time.Now().Before(wait); {
		time.Sleep(200 * time.Millisecond)
		res = invocation{args: args("failures", "--since", "1h", "--output", "json"), env: exported}.run(t)
	}
	if res.code != 0 || !strings.Contains(res.stdout, `"overloaded"`) {
		t.Fatalf("failures with the banner's line %q: exit %d %s %s", line, res.code, res.stdout, res.stderr)
	}
	if res := (invocation{args: args("replay", "--from", "failures", "--since", "1h", "--dry-run"), env: exported}).run(t); res.code != 0 {
		t.Fatalf("replay with the banner's line: exit %d %s", res.code, res.stderr)
	}
}

// TestWithoutAnEndpointTheErrorSaysWhatToSet: next to make dev, a shell
// without AWS_ENDPOINT_URL sends the commands down AWS's credential chain;
// on a machine with no credentials the chain ends at instance metadata
// (disabled here so the test does not wait for it), and the error names
// the variable to set.
func TestWithoutAnEndpointTheErrorSaysWhatToSet(t *testing.T) {
	for k, v := range map[string]string{"AWS_EC2_METADATA_DISABLED": "true", "AWS_ACCESS_KEY_ID": "", "AWS_SECRET_ACCESS_KEY": "",
		"AWS_SESSION_TOKEN": "", "AWS_PROFILE": "", "AWS_CONFIG_FILE": "/nonexistent", "AWS_SHARED_CREDENTIALS_FILE": "/nonexistent",
		"AWS_WEB_IDENTITY_TOKEN_FILE": "", "AWS_CONTAINER_CREDENTIALS_FULL_URI": "", "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI": "", "AWS_ENDPOINT_URL": ""} {
		t.Setenv(k, v)
	}
	res := invocation{args: args("failures", "--since", "1h"), env: map[string]string{"AWS_REGION": "us-east-1"}}.run(t)
	if res.code != exitUsage || !strings.Contains(res.stderr, "set AWS_ENDPOINT_URL") {
		t.Fatalf("exit %d, stderr %s", res.code, res.stderr)
	}
}

func sameTotals(got, want []total) bool {
	g, _ := json.Marshal(got)
	w, _ := json.Marshal(want)
	return string(g) == string(w)
}

func jsonHas(t *testing.T, s string, parts ...string) bool {
	t.Helper()
	for _, p := range parts {
		if !strings.Contains(s, p) {
			return false
		}
	}
	return true
}

func TestAdviseMeasuresTheP99FromTheTable(t *testing.T) {
	env, st := operatorEnv(t)
	ctx := context.Background()
	mk := func(key string, state job.State, attempts int, ran time.Duration) {
		j := job.Job{ID: job.NewID("t", key), Tenant: "t", RequestKey: key, InputHash: "sha256:x", Model: "reports",
			Input: json.RawMessage(`{}`), State: state, Attempts: attempts, MaxAttempts: 3, Budget: job.Cents(1), RunTime: ran,
			Deadline: clienttest.T0.Add(time.Hour), Version: 3, CreatedAt: clienttest.T0, UpdatedAt: clienttest.T0}
		if _, err := st.Create(ctx, j); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 10 {
		mk(fmt.Sprint("ok-", i), job.Succeeded, 1, 2*time.Second)
	}
	// Three attempts: 20 s of calls and two backoffs at the top of their
	// jitter (2 s and 4 s with the default 2 s base): 26 s.
	mk("slow", job.Failed, 3, 20*time.Second)
	mk("running", job.Running, 1, time.Hour)     // not finished: not measured
	mk("cancelled", job.Abandoned, 1, time.Hour) // abandoned: not measured
	for hop, mode := range map[string]string{"rest": "async", "alb": "sync-stream"} {
		res := invocation{args: args("advise", "--from-table", "--model", "reports", "--awaited", "--hop", hop, "--output", "json"), env: env}.run(t)
		var d decisionJSON
		if err := json.Unmarshal([]byte(res.stdout), &d); err != nil || res.code != 0 {
			t.Fatalf("%s: %d %s %s", hop, res.code, res.stdout, res.stderr)
		}
		if d.P99Seconds != 26 || string(d.Mode) != mode || !strings.Contains(res.stderr, "11 finished jobs") {
			t.Fatalf("%s: %+v (stderr %q), want p99 26s and %s", hop, d, res.stderr, mode)
		}
	}
	if res := (invocation{args: args("advise", "--from-table", "--model", "nothing-here", "--awaited"), env: env}).run(t); res.code != exitUsage {
		t.Fatalf("an empty route: exit %d %s", res.code, res.stderr)
	}
}

// --lanes measures each cost lane's p99 from the jobs that succeeded in
// it at their first attempt (a retried job's run time is more than its
// lane's).
func TestAdviseMeasuresEachLanesP99FromTheTable(t *testing.T) {
	env, st := operatorEnv(t)
	mk := func(key string, lane job.Lane, attempts int, ran time.Duration) {
		j := job.Job{ID: job.NewID("t", key), Tenant: "t", RequestKey: key, InputHash: "sha256:x", Model: "laned",
			Input: json.RawMessage(`{}`), State: job.Succeeded, Attempts: attempts, MaxAttempts: 3, Budget: job.Cents(1), RunTime: ran,
			ResultLane: lane, Deadline: clienttest.T0.Add(time.Hour), Version: 3, CreatedAt: clienttest.T0, UpdatedAt: clienttest.T0}
		if _, err := st.Create(t.Context(), j); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 4 {
		mk(fmt.Sprint("flex-", i), job.Flex, 1, time.Duration(i+5)*time.Second)
		mk(fmt.Sprint("batch-", i), job.Batch, 1, time.Duration(i+1)*time.Hour)
	}
	mk("flex-retried", job.Flex, 2, time.Minute)
	res := invocation{args: args("advise", "--from-table", "--lanes", "--model", "laned", "--outlives"), env: env}.run(t)
	if res.code != 0 || !strings.Contains(res.stderr, "lane batch: 4 jobs succeeded at their first attempt, p50 3h0m0s, p99 4h0m0s") ||
		!strings.Contains(res.stderr, "lane flex: 4 jobs succeeded at their first attempt, p50 7s, p99 8s") || strings.Contains(res.stderr, "lane standard") {
		t.Fatalf("exit %d, stderr:\n%s", res.code, res.stderr)
	}
}
