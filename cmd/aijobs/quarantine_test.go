package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/aijobs/aijobs/internal/awstest"
	"github.com/aijobs/aijobs/pkg/awsclient"
	"github.com/aijobs/aijobs/pkg/client/clienttest"
	"github.com/aijobs/aijobs/pkg/dynamodb"
	"github.com/aijobs/aijobs/pkg/job"
	"github.com/aijobs/aijobs/pkg/settings"
)

const (
	qHashA = "sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	qHashB = "sha256:bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
)

// quarantineEnv creates the quarantine table of a fresh prefix on the
// emulator and puts three quarantines in force at the invocation's clock
// (two of jwt:a, one of jwt:b) and one that expired; it returns the
// environment the commands read and the store over the table.
func quarantineEnv(t *testing.T) (map[string]string, *dynamodb.Quarantines) {
	t.Helper()
	ctx := context.Background()
	s := settings.Defaults()
	s.Prefix = awstest.Prefix(t)
	ddb := awsclient.DynamoDB(awstest.Config(t, nil))
	if err := dynamodb.CreateQuarantineTable(ctx, ddb, s.QuarantineTableName()); err != nil {
		t.Fatal(err)
	}
	qs := dynamodb.NewQuarantines(ddb, s.QuarantineTableName())
	now := clienttest.T0
	for _, q := range []job.Quarantine{
		{Tenant: "jwt:a", Model: "default", InputHash: qHashA, Class: job.ContentFiltered, JobID: "job_a1", At: now.Add(-time.Hour), Until: now.Add(23 * time.Hour)},
		{Tenant: "jwt:a", Model: "reports", InputHash: qHashB, Class: job.ContextLengthExceeded, JobID: "job_a2", At: now.Add(-2 * time.Hour), Until: now.Add(22 * time.Hour)},
		{Tenant: "jwt:b", Model: "default", InputHash: qHashA, Class: job.InvalidRequest, JobID: "job_b1", At: now.Add(-3 * time.Hour), Until: now.Add(21 * time.Hour)},
		{Tenant: "jwt:a", Model: "default", InputHash: qHashB, Class: job.ContentFiltered, JobID: "job_old", At: now.Add(-25 * time.Hour), Until: now.Add(-time.Hour)},
	} {
		if err := qs.Quarantine(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	env := map[string]string{"AWS_ENDPOINT_URL": awstest.Endpoint(t), "AWS_REGION": "us-east-1", "AIJOBS_PREFIX": s.Prefix}
	return env, qs
}

func TestQuarantineListOnTheEmulator(t *testing.T) {
	env, _ := quarantineEnv(t)
	res := invocation{args: args("quarantine", "list", "--output", "json"), env: env}.run(t)
	if res.code != 0 {
		t.Fatalf("exit %d: %s", res.code, res.stderr)
	}
	var rows []quarantineRow
	if err := json.Unmarshal([]byte(res.stdout), &rows); err != nil {
		t.Fatalf("%q: %v", res.stdout, err)
	}
	var ids []string
	for _, r := range rows {
		ids = append(ids, r.JobID)
	}
	if strings.Join(ids, ",") != "job_a1,job_a2,job_b1" { // newest first, the expired one left out
		t.Fatalf("listed %v", ids)
	}
	// The JSON keys are the documented ones (docs/cli.md, "quarantine").
	want := `{"tenant":"jwt:a","route":"default","input_hash":"` + qHashA + `","error_class":"content_filtered","job_id":"job_a1",` +
		`"since":"` + clienttest.T0.Add(-time.Hour).Format(time.RFC3339) + `","until":"` + clienttest.T0.Add(23*time.Hour).Format(time.RFC3339) + `"}`
	if !strings.HasPrefix(res.stdout, "["+want+",") {
		t.Fatalf("JSON %s, want it to start with %s", res.stdout, want)
	}

	res = invocation{args: args("quarantine", "--output", "table", "list", "--tenant", "jwt:b"), env: env}.run(t)
	if res.code != 0 || !strings.Contains(res.stdout, "1 quarantines in force") || !strings.Contains(res.stdout, "TENANT  ROUTE") ||
		!strings.Contains(res.stdout, "job_b1") || strings.Contains(res.stdout, "job_a1") || !strings.Contains(res.stdout, "invalid_request") {
		t.Fatalf("one tenant's as a table: exit %d\n%s%s", res.code, res.stdout, res.stderr)
	}
	if res := (invocation{args: args("quarantine", "list", "--tenant", "jwt:nobody", "--output", "json"), env: env}).run(t); res.code != 0 || res.stdout != "[]\n" {
		t.Fatalf("a tenant with none: exit %d %q %s", res.code, res.stdout, res.stderr)
	}
}

func TestQuarantineLiftOnTheEmulator(t *testing.T) {
	env, qs := quarantineEnv(t)
	ctx := context.Background()
	lift := args("quarantine", "lift", "--tenant", "jwt:a", "--route", "default", "--input-hash", qHashA)
	res := invocation{args: append(lift, "--output", "json"), env: env}.run(t)
	if res.code != 0 {
		t.Fatalf("exit %d: %s", res.code, res.stderr)
	}
	var r liftReport
	if err := json.Unmarshal([]byte(res.stdout), &r); err != nil || !r.Lifted || r.Quarantine == nil || r.Quarantine.JobID != "job_a1" ||
		r.Tenant != "jwt:a" || r.Route != "default" || r.InputHash != qHashA {
		t.Fatalf("lift: %s %v", res.stdout, err)
	}
	k := job.QuarantineKey{Tenant: "jwt:a", Model: "default", InputHash: qHashA}
	if _, held, err := qs.Quarantined(ctx, k, clienttest.T0); err != nil || held {
		t.Fatalf("the lifted quarantine still holds (%v)", err)
	}
	// Only that one: the same input of another tenant, and another route
	// of the same tenant, stay.
	for _, other := range []job.QuarantineKey{{Tenant: "jwt:b", Model: "default", InputHash: qHashA}, {Tenant: "jwt:a", Model: "reports", InputHash: qHashB}} {
		if _, held, err := qs.Quarantined(ctx, other, clienttest.T0); err != nil || !held {
			t.Fatalf("lifting %v lifted %v (%v)", k, other, err)
		}
	}
	// Again: idempotent, and it says there was nothing to lift.
	res = invocation{args: append(lift, "--output", "table"), env: env}.run(t)
	if res.code != 0 || !strings.Contains(res.stdout, "nothing to lift") {
		t.Fatalf("second lift: exit %d %q %s", res.code, res.stdout, res.stderr)
	}
	res = invocation{args: append(lift, "--output", "json"), env: env}.run(t)
	if res.code != 0 || !strings.Contains(res.stdout, `"lifted":false`) || strings.Contains(res.stdout, `"quarantine"`) {
		t.Fatalf("second lift as JSON: exit %d %q %s", res.code, res.stdout, res.stderr)
	}
	// The table says what it lifted.
	res = invocation{args: args("quarantine", "lift", "--tenant", "jwt:b", "--route", "default", "--input-hash", qHashA, "--output", "table"), env: env}.run(t)
	if res.code != 0 || !strings.Contains(res.stdout, "lifted the quarantine of tenant jwt:b, route default") || !strings.Contains(res.stdout, "job job_b1") {
		t.Fatalf("lift as a table: exit %d %q %s", res.code, res.stdout, res.stderr)
	}
	// --quarantine-table names another table: there is none of that name.
	res = invocation{args: append(lift, "--quarantine-table", env["AIJOBS_PREFIX"]+"-nosuch"), env: env}.run(t)
	if res.code != exitAPI || !strings.HasPrefix(res.stderr, "aijobs: quarantine lift: ") {
		t.Fatalf("no such table: exit %d %s", res.code, res.stderr)
	}
}
