package console_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/aijobs/aijobs/pkg/job"
)

// laneJob adds to f a job of tenant-a that allowed lanes and succeeded in
// lane, its calls having cost cost and saved saved against standard
// prices, through the store's own transitions (so the record is what a
// worker would leave).
func laneJob(t *testing.T, f *fixture, key string, lanes []job.Lane, lane job.Lane, cost, saved job.Nanocents) string {
	t.Helper()
	ctx := context.Background()
	at := now.Add(-15 * time.Minute)
	j := job.Job{ID: job.NewID("tenant-a", key), Tenant: "tenant-a", RequestKey: key, InputHash: "sha256:" + key[:1], Model: "default",
		Input: json.RawMessage(`{"messages":[{"role":"user","content":"hi"}]}`), State: job.Queued, MaxAttempts: 3, Lanes: lanes,
		Budget: job.Cents(5), Reserve: 1000, Deadline: now.Add(time.Hour), Version: 1, CreatedAt: at, UpdatedAt: at}
	if _, err := f.store.Create(ctx, j); err != nil {
		t.Fatal(err)
	}
	if _, err := f.store.Claim(ctx, job.Claim{ID: j.ID, Owner: "w", Now: at.Add(time.Second), LeaseUntil: now.Add(time.Minute)}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.store.Succeed(ctx, job.Succeed{ID: j.ID, Owner: "w", Now: at.Add(2 * time.Second),
		Settlement: job.Settlement{Cost: cost, Held: 1000, Saved: saved, Lane: lane, Attempt: 1}, Result: json.RawMessage(`{"output":"ok"}`),
		Model: "small", Lane: lane, ExpiresAt: now.Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	return j.ID
}

func TestAJobPageShowsItsLanesAndWhatTheySaved(t *testing.T) {
	f := setup(t)
	flex := laneJob(t, f, "flex", []job.Lane{job.Flex, job.Standard}, job.Flex, 1200, 1200)
	priority := laneJob(t, f, "priority", []job.Lane{job.Priority}, job.Priority, 3600, -1200)

	code, body := f.get(t, "/jobs/"+flex)
	if code != 200 {
		t.Fatalf("flex job: %d %s", code, body)
	}
	wantAll(t, "flex job", body, "default → small, served in the", `id="result-lane">flex<`, `id="lanes">flex, standard<`, `id="attempt-lanes">1: flex<`,
		`id="saved">0.0000012 cents less than at standard prices<`, "0.0000012 cents")
	if strings.Contains(body, "premium") {
		t.Error("a saving is shown as a premium")
	}

	code, body = f.get(t, "/jobs/"+priority)
	if code != 200 {
		t.Fatalf("priority job: %d %s", code, body)
	}
	wantAll(t, "priority job", body, `id="result-lane">priority<`, `id="lanes">priority<`, "0.0000036 cents",
		`id="saved" class="premium">−0.0000012 cents (priority premium`)
	if strings.Contains(body, "less than at standard") || strings.Contains(body, "-0.0000012") {
		t.Error("a premium is shown as a saving, or with a hyphen for its sign")
	}

	// A job with no lane and nothing saved shows nothing new.
	_, body = f.get(t, "/jobs/"+f.ids["succeeded"])
	for _, absent := range []string{`id="saved"`, `id="result-lane"`, `id="lanes"`, `id="attempt-lanes"`} {
		if strings.Contains(body, absent) {
			t.Errorf("a job without lanes shows %s", absent)
		}
	}
}

// TestListsShowNoSavingTheirIndexesDoNotCarry: the jobs lists read the
// tenant index or the created index (job.Summary), which carry neither
// saved_nc nor result_lane in DynamoDB, so they show neither, even over
// the memory store, which could.
func TestListsShowNoSavingTheirIndexesDoNotCarry(t *testing.T) {
	f := setup(t)
	laneJob(t, f, "priority", []job.Lane{job.Priority}, job.Priority, 3600, -1200)
	for _, path := range []string{"/jobs", "/jobs?tenant=tenant-a", "/"} {
		code, body := f.get(t, path)
		if code != 200 {
			t.Fatalf("%s: %d", path, code)
		}
		if strings.Contains(body, "premium") || strings.Contains(body, "saved") {
			t.Errorf("%s shows a saving its data source cannot carry", path)
		}
	}
}

func TestCapacityUnavailableIsAClassLikeAnyOther(t *testing.T) {
	f := setup(t)
	ctx := context.Background()
	at := now.Add(-10 * time.Minute)
	j := job.Job{ID: job.NewID("tenant-a", "capacity"), Tenant: "tenant-a", RequestKey: "capacity", InputHash: "sha256:c", Model: "default",
		Input: json.RawMessage(`{"messages":[{"role":"user","content":"hi"}]}`), State: job.Queued, MaxAttempts: 3, Lanes: []job.Lane{job.Flex},
		Budget: job.Cents(5), Reserve: 1000, Deadline: now.Add(time.Hour), Version: 1, CreatedAt: at, UpdatedAt: at}
	if _, err := f.store.Create(ctx, j); err != nil {
		t.Fatal(err)
	}
	if _, err := f.store.Claim(ctx, job.Claim{ID: j.ID, Owner: "w", Now: at, LeaseUntil: now.Add(time.Minute)}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.store.End(ctx, job.End{ID: j.ID, Owner: "w", Now: at.Add(time.Second), Settlement: job.Settlement{Held: 1000},
		Class: job.CapacityUnavailable, ExpiresAt: now.Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string][]string{
		"/jobs":                            {"<option >capacity_unavailable</option>"},
		"/jobs?class=capacity_unavailable": {"<option selected>capacity_unavailable</option>", j.ID},
		"/jobs?tenant=tenant-a&class=capacity_unavailable": {j.ID},
		"/failures": {"<option >capacity_unavailable</option>", `/failures/jobs?class=capacity_unavailable`},
		"/failures/jobs?class=capacity_unavailable": {j.ID},
		"/":             {`/failures/jobs?class=capacity_unavailable&amp;since=1h`},
		"/jobs/" + j.ID: {"failed</span> · capacity_unavailable", `id="lanes">flex<`},
	} {
		code, body := f.get(t, path)
		if code != 200 {
			t.Fatalf("%s: %d %s", path, code, body)
		}
		wantAll(t, path, body, want...)
	}
}
