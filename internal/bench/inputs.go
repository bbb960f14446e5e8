package bench

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// InputUnits is what a heartbeat cost at one input size: the jobs
// table's write units per job at two fake model latencies, and their
// difference per UpdateItem the longer latency added (only heartbeats
// grow with the call's length), which is a heartbeat's write units.
type InputUnits struct {
	InputBytes           int
	Short, Long          Result
	PerJobShort, PerBeat float64
}

// inputLatencies are the two call lengths whose difference is heartbeats
// only: at the stack's 500 ms heartbeat, about four more per job.
var inputLatencies = [2]time.Duration{time.Second, 3 * time.Second}

// UnitsByInput runs o through the quota front (RunUnits) at each input
// size, twice, and answers a heartbeat's write units at each (issue N
// item 1: they must not grow with the input; docs/payloads.md,
// "Thresholds").
func UnitsByInput(ctx context.Context, o Options, sizes []int) ([]InputUnits, error) {
	var out []InputUnits
	for _, n := range sizes {
		u := InputUnits{InputBytes: n}
		runs := [2]*Result{&u.Short, &u.Long}
		for i, lat := range inputLatencies {
			r := o
			r.InputBytes, r.Latency = n, lat
			// A 4 MB create is validated, hashed and stored whole: more than
			// the default 10 s API timeout on a loaded machine.
			r.Env = map[string]string{"AIJOBS_HEARTBEAT": "500ms", "AIJOBS_DEFAULT_BUDGET_CENTS": "10000", "AIJOBS_API_TIMEOUT": "29s"}
			res, err := RunUnits(ctx, r)
			if err != nil {
				return out, fmt.Errorf("input %d bytes, latency %s: %w", n, lat, err)
			}
			*runs[i] = res
		}
		w := [2]float64{tableWrites(u.Short), tableWrites(u.Long)}
		updates := float64(u.Long.Calls["DynamoDB.UpdateItem"] - u.Short.Calls["DynamoDB.UpdateItem"])
		u.PerJobShort = w[0] / float64(max(o.Jobs, 1))
		if updates > 0 {
			u.PerBeat = (w[1] - w[0]) / updates
		}
		out = append(out, u)
	}
	return out, nil
}

// tableWrites is the jobs table's own write units in r (its indexes
// apart).
func tableWrites(r Result) float64 {
	for _, s := range r.Units.Scopes {
		if s.Table == "jobs" && s.Index == "" {
			return s.Write
		}
	}
	return 0
}

// InputUnitsReport renders us as Markdown.
func InputUnitsReport(us []InputUnits) string {
	var b strings.Builder
	b.WriteString("| input | jobs table write units per job (1 s call) | write units per heartbeat |\n|---|---|---|\n")
	for _, u := range us {
		fmt.Fprintf(&b, "| %d bytes | %.2f | %.2f |\n", u.InputBytes, u.PerJobShort, u.PerBeat)
	}
	return b.String()
}
