package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/aijobs/aijobs/internal/awstest"
	"github.com/aijobs/aijobs/pkg/job"
	"github.com/aijobs/aijobs/pkg/model"
	"github.com/aijobs/aijobs/pkg/model/anthropic/anthropictest"
	"github.com/aijobs/aijobs/pkg/model/bedrock/bedrocktest"
	"github.com/aijobs/aijobs/pkg/model/openai/openaitest"
	"github.com/aijobs/aijobs/pkg/s3"
)

// batchServer is a provider's local batch server, as the test reads it:
// what its provider entry says to reach it, and what it counted.
type batchServer struct {
	kind, expire string
	entry        func(url string) string
	// min is the fewest jobs a batch of the kind holds (0: one).
	min            int
	handler        http.Handler
	generated      func(string) int
	calls, batches func() int
}

func batchServers(t *testing.T) []batchServer {
	oa, an := &openaitest.Server{Polls: 1}, &anthropictest.Server{Polls: 1}
	br := bedrocktest.New(s3.NewClient(awstest.Config(t, nil)))
	br.Polls = 1
	baseURL := func(url string) string { return `"base_url": "` + url + `"` }
	return []batchServer{
		{kind: "openai", expire: "[[openai:expire]]", entry: baseURL, handler: oa.Handler(), generated: oa.Generated, calls: oa.Calls, batches: oa.Batches},
		{kind: "anthropic", expire: "[[anthropic:expire]]", entry: baseURL, handler: an.Handler(), generated: an.Generated, calls: an.Calls, batches: an.Batches},
		// Bedrock's job reads and writes the emulator's S3, in the
		// bucket the dev server makes. Its batches hold at least 100
		// records (the per-model quota; the lane's min_jobs may not go
		// below it), so its run sends 100 jobs and no expiring item: an
		// item handed back alone could not make a batch again.
		{kind: "bedrock", min: 100, entry: func(url string) string { return `"region": "us-east-1", "endpoint": "` + url + `"` },
			handler: br.Handler(), generated: br.Generated, calls: br.Calls, batches: br.Jobs},
	}
}

// TestAProvidersBatchLaneRunsThroughTheStack runs the batch lane on
// OpenAI's, Anthropic's and Bedrock's batch wire (their local servers:
// openaitest, anthropictest, bedrocktest over the emulator's S3) through
// the whole stack: jobs due in an hour are enlisted by the worker,
// collected into the provider's batches by the dev server's collector and
// settled from the results at the batch price, each generated once; an
// item the batch let expire goes back to the queue and is batched again;
// jobs due sooner than a batch's p99 are called in the standard lane.
//
// Not parallel with the package's load tests: each job's cost is held to
// exactly one call, which a lease lost under the 2,000-job replay's load
// would rightly make two.
func TestAProvidersBatchLaneRunsThroughTheStack(t *testing.T) {
	for _, srv := range batchServers(t) {
		t.Run(srv.kind, func(t *testing.T) {
			t.Parallel()
			runBatchLane(t, srv)
		})
	}
}

func runBatchLane(t *testing.T, srv batchServer) {
	hs := httptest.NewServer(srv.handler)
	t.Cleanup(hs.Close)
	routes := `{"providers": {"p": {"kind": "` + srv.kind + `", ` + srv.entry(hs.URL) + `, "stream": false}},
  "routes": {"default": {"rungs": [{"provider": "p", "model": "m-test", "price": {"input": "100", "output": "400"}, "timeout": "10s", "p99": "5s",
    "lanes": {"batch": {"price": {"input": "50", "output": "200"}, "p99": "60s", "window": "300ms", "min_jobs": ` + fmt.Sprint(max(srv.min, 1)) + `}}}]}}}`
	// The steady lease: the standard calls are counted exactly (two), and
	// a heartbeat late under load with the harness's 1 s lease would
	// rightly make one of them two.
	env := map[string]string{"AIJOBS_ROUTES": routes, "AIJOBS_COLLECT_EVERY": "250ms", "AIJOBS_BATCH_ROLE_ARN": "arn:aws:iam::123456789012:role/batch",
		"AIJOBS_WORKER_TIMEOUT": "20s", "AIJOBS_VISIBILITY_TIMEOUT": "21s"}
	for k, v := range steadyLease {
		env[k] = v
	}
	s := startStackWith(t, env, false)
	rung := s.app.Config.Routes["default"].Rungs[0]
	batch, _ := rung.InLane(job.Batch)
	var ids []string
	soon := map[string]bool{}
	for i := range max(12, srv.min+2) {
		content, deadline := fmt.Sprint("batched question ", i), 3600
		switch {
		case i == 0 && srv.expire != "":
			content += " " + srv.expire
		case i == 1 || i == 2:
			deadline = 20 // a batch's p99 (60 s) does not fit
		}
		id := s.submit("t", fmt.Sprint("oab-", i), jobBody(content, fmt.Sprintf(`"deadline_seconds": %d`, deadline)))
		ids = append(ids, id)
		soon[id] = deadline < 60
	}
	for _, j := range awaitAll(t, s, ids, 2*time.Minute) {
		lane, name := batch, job.Batch
		if soon[j.ID] {
			lane, name = rung, job.Standard
		}
		var res struct{ Usage model.Usage }
		if err := json.Unmarshal(j.Result, &res); err != nil {
			t.Fatalf("job %s: %s (%s %s)", j.ID, j.State, j.ErrorClass, j.ErrorDetail)
		}
		u := res.Usage
		if j.State != job.Succeeded || j.ResultLane != name || u.Estimated || u.InputTokens == 0 ||
			j.Cost != u.Cost(lane.Price) || j.Saved != u.Cost(rung.Price)-u.Cost(lane.Price) || !savedSign(name, j.Saved) || j.Held != 0 {
			t.Errorf("job %s: %s in lane %q, cost %s saved %s held %s, usage %+v; want %s at that lane's price",
				j.ID, j.State, j.ResultLane, j.Cost, j.Saved, j.Held, u, name)
		}
		if !soon[j.ID] && srv.generated(j.ID) != 1 {
			t.Errorf("job %s generated %d times in batches", j.ID, srv.generated(j.ID))
		}
	}
	if want := min(2, 1+len(srv.expire)); srv.calls() != 2 || srv.batches() < want {
		t.Errorf("%d standard calls (want 2), %d batches (want %d: the first and any expired item's next)", srv.calls(), srv.batches(), want)
	}
}
