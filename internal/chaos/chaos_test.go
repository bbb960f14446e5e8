package chaos

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/aijobs/aijobs/internal/awstest"
	"github.com/aijobs/aijobs/pkg/job"
)

// TestShortChaosRun is the short seeded run `make test` includes: about
// two minutes of jobs under every fault of the schedule (about a minute of
// load, then the drain the reconciler's bound needs), failing when any
// invariant breaks. `make chaos` runs the long one.
func TestShortChaosRun(t *testing.T) {
	o := DefaultOptions()
	o.Seed, o.Jobs, o.Load, o.KillEvery = 20261203, 150, 60*time.Second, 12*time.Second
	r := shortRun(t, o)
	// The laned route ran in flex, flex refused some of its requests (the
	// harsh run's 100 jobs are too few to be sure of one), and each
	// job's saving on its record is the bill's.
	if c := r.Lanes[job.Flex]; c == nil || c.Succeeded == 0 || c.Refused == 0 || r.Faults[ModelFlexRefused] == 0 {
		t.Errorf("the flex lane did not run or was never refused: %+v", c)
	}
	// Prompts hit the cache and answers reasoned, so invariant 3 held
	// the records to the bill's parts, not to its totals alone.
	if r.Usage.Cached == 0 || r.Usage.Reasoning == 0 {
		t.Errorf("no billed generation had cached or reasoning tokens: %+v", r.Usage)
	}
	if r.Saved.Exact == 0 || r.Saved.Differ > 0 {
		t.Errorf("%d of %d jobs at the bill's exact cost record another saving: %v (none at the exact cost checks nothing)",
			r.Saved.Differ, r.Saved.Exact, r.Saved.Differing)
	}
}

// shortRun runs o against this package's emulator with the worker binary
// built here, and fails when an invariant broke or a fault kind the
// schedule should inject never was. It returns the run's report.
func shortRun(t *testing.T, o Options) *Report {
	bin := filepath.Join(t.TempDir(), "aijobs-chaos")
	if out, err := exec.Command("go", "build", "-o", bin, "../../cmd/aijobs-chaos").CombinedOutput(); err != nil {
		t.Fatalf("build aijobs-chaos: %v\n%s", err, out)
	}
	// The logs stay when the run fails: the report names their directory.
	logs, err := os.MkdirTemp("", "aijobs-chaos-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if !t.Failed() {
			_ = os.RemoveAll(logs)
		}
	})
	o.Endpoint, o.WorkerBin, o.LogDir = awstest.Endpoint(t), bin, logs
	r, err := Run(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Log("\n" + r.String())
	if r.Succeeded == 0 || r.AijobsBilled == 0 || r.BaselineSucceeded == 0 {
		t.Fatalf("nothing ran: %d succeeded, %d billed generations, baseline %d", r.Succeeded, r.AijobsBilled, r.BaselineSucceeded)
	}
	if c := r.Routes["background"]; c == nil || c.Succeeded == 0 || c.AijobsBilled == 0 || r.BackgroundRead == 0 {
		t.Errorf("the background route did not run: %+v, %d of its generations read whole", c, r.BackgroundRead)
	}
	if r.Payloads.Referenced == 0 {
		t.Errorf("no job's input was in the payload store: %+v", r.Payloads)
	}
	if r.Payloads.ByLink == 0 || r.Payloads.LinksChecked != r.Payloads.ByLink {
		t.Errorf("no succeeded job's answer was in the payload store, or one was not as recorded: %+v", r.Payloads)
	}
	if !spendLimitMet(r.Spend) {
		t.Errorf("no job of a limited tenant was deferred, abandoned or refused for spend: %+v", r.Spend)
	}
	if c := r.Routes["detached"]; c == nil || c.Succeeded == 0 || c.AijobsBilled == 0 {
		t.Errorf("the detached route did not run: %+v", c)
	}
	for _, kind := range []string{AWSThrottle, AWSServerError, AWSStall, AWSHang, AWSLostAnswer, ModelStallHeaders, ModelCut,
		ModelTrickle, ModelRateLimited, ModelOverloaded, ModelLate, APIKilled, "worker_sigkill", "duplicate_message"} {
		if r.Faults[kind] == 0 {
			t.Errorf("the schedule injected no %s", kind)
		}
	}
	if r.Failed() {
		t.Fatalf("an invariant broke (seed %d; replay with make chaos SEED=%d JOBS=%d DURATION=%s)", o.Seed, o.Seed, o.Jobs, o.Load)
	}
	return r
}

// spendLimitMet reports whether any limited tenant met its limit: a job
// deferred, abandoned `spend_limit`, or refused at create.
func spendLimitMet(spend []TenantSpend) bool {
	for _, s := range spend {
		if s.Deferred+s.Abandoned+s.RefusedAtCreate > 0 {
			return true
		}
	}
	return false
}
