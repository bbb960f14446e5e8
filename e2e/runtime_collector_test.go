package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/aijobs/aijobs/pkg/app"
	"github.com/aijobs/aijobs/pkg/config"
	"github.com/aijobs/aijobs/pkg/job"
)

// batchLaneRoutes is the fake's route with a batch lane, for the
// collector function: a batch is collected as soon as a job waits.
const batchLaneRoutes = `{"providers": {"f": {"kind": "fake"}}, "routes": {"default": {"rungs": [{"provider": "f",
  "price": {"input": "100", "output": "400"}, "lanes": {"batch": {"price": {"input": "50", "output": "200"}, "p99": "1h", "window": "1ms"}}}]}}}`

// collector runs the batch lane's collector function under the emulator,
// with the environment the stack gives it (a route with a batch lane, the
// buckets table): its first scheduled invocation collects a job a worker
// enlisted and submits it (the fake's batch, kept by the warm process),
// a later one settles it at the batch price.
func (r *rieRun) collector(t *testing.T, rie, bootstrap string, env map[string]string) {
	env = maps.Clone(env)
	env["AIJOBS_ROUTES"] = batchLaneRoutes
	cfg, err := config.Load(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	a, err := app.New(ctx, cfg, app.Options{CreateResources: true, Role: app.ReconcilerRole, Logger: app.Logger("error")})
	if err != nil {
		t.Fatal(err)
	}
	env["AIJOBS_BUCKETS_TABLE"] = a.Config.BucketsTable
	j := r.enlisted(t, a)
	fn := startRIE(t, rie, "collector", bootstrap, env, a.Config.Settings.CollectorTimeout)
	ev := events.CloudWatchEvent{Version: "0", ID: "rie-collect", DetailType: "Scheduled Event", Source: "aws.events",
		AccountID: "000000000000", Time: time.Now().UTC(), Region: "us-east-1", Detail: json.RawMessage(`{}`),
		Resources: []string{"arn:aws:events:us-east-1:000000000000:rule/aijobs-collect"}}
	var out any
	took := fn.invoke(t, ev, &out)
	if got, err := a.Store.Get(t.Context(), j.ID); err != nil || got.Batch == "" || got.LeaseOwner != job.BatchOwner(got.Batch) {
		t.Fatalf("after the first run: %+v, %v; want collected into a batch", got, err)
	}
	var got job.Job
	for wait := time.Now().Add(10 * time.Second); got.State != job.Succeeded && time.Now().Before(wait); time.Sleep(200 * time.Millisecond) {
		fn.invoke(t, ev, &out)
		if got, err = a.Store.Get(t.Context(), j.ID); err != nil {
			t.Fatal(err)
		}
	}
	if got.State != job.Succeeded || got.ResultLane != job.Batch || got.Held != 0 || got.Cost == 0 {
		t.Fatalf("after the runs: %+v, want succeeded in the batch lane", got)
	}
	t.Logf("collector: collected and submitted in %s (init included), settled in a later run", took.Round(time.Millisecond))
}

// enlisted is a job a worker claimed and enlisted in the batch lane.
func (r *rieRun) enlisted(t *testing.T, a *app.App) job.Job {
	t.Helper()
	j := r.seedJob(t, fmt.Sprint("batched-", time.Now().UnixNano()), time.Second)
	now := time.Now()
	if _, err := a.Store.Claim(t.Context(), job.Claim{ID: j.ID, Owner: "w_rie", Now: now, LeaseUntil: now.Add(time.Minute)}); err != nil {
		t.Fatal(err)
	}
	got, err := a.Store.Enlist(t.Context(), job.Enlist{ID: j.ID, Owner: "w_rie", Now: now.Add(time.Millisecond),
		Lane: job.LaneKey("default", 0), Until: now.Add(50 * time.Minute)})
	if err != nil {
		t.Fatal(err)
	}
	return got
}
