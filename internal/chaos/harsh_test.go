//go:build chaosharsh

package chaos

import (
	"testing"
	"time"
)

// TestShortHarshChaosRun is the harsh profile's short seeded run (issue
// W's AWS fault rates on every DynamoDB, SQS and S3 call: docs/chaos.md),
// beside the default one: the same invariants, the parked outcomes
// included. It is built only with -tags chaosharsh, by `make
// test-chaos-harsh`, which CI runs after `make test`: alone, not beside
// the end-to-end suite and the default short run, whose timings a second
// chaos run's load on a 2-core machine would test instead of the code.
func TestShortHarshChaosRun(t *testing.T) {
	o := DefaultOptions()
	Profiles["harsh"](&o)
	o.Seed, o.Jobs, o.Load, o.KillEvery = 20261204, 100, 45*time.Second, 12*time.Second
	shortRun(t, o)
}
