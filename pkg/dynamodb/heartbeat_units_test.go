package dynamodb

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aijobs/aijobs/pkg/api"
	"github.com/aijobs/aijobs/pkg/job"
	"github.com/aijobs/aijobs/pkg/settings"
)

// heartbeatUnits is what DynamoDB bills a heartbeat of the running job
// whose create body held an input of n bytes of content, kept as the API
// keeps it (inline up to api.InlineInputBytes, else a pointer to the
// payload store): an UpdateItem costs one write unit per KB of the
// larger of the item before and after, however few attributes it sets
// (https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/read-write-operations.html).
func heartbeatUnits(t *testing.T, n int) int {
	t.Helper()
	body := `{"input":{"messages":[{"role":"user","content":"` + strings.Repeat("x", n) + `"}]}}`
	req, err := api.ParseCreate("jwt:tenant", "k", []byte(body), settings.Defaults().Limits)
	if err != nil {
		t.Fatalf("ParseCreate: %v", err)
	}
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	j := req.NewJob(now, time.Hour)
	if len(j.Input) > api.InlineInputBytes {
		ref := job.PayloadOf("inputs/"+j.ID+"/"+strings.TrimPrefix(j.InputHash, "sha256:"), j.Input)
		j.InputRef, j.Input = &ref, nil
	}
	j.State, j.Attempts, j.LeaseOwner, j.LeaseUntil = job.Running, 1, "w_0123456789abcdef", now.Add(time.Minute)
	before := itemSize(toItem(j, indexes{activeShards: 16, createdShards: 16}))
	j = job.Heartbeat{ID: j.ID, Owner: j.LeaseOwner, Now: now.Add(30 * time.Second), LeaseUntil: now.Add(90 * time.Second), Progress: 0.5}.Apply(j)
	j.Version++
	after := itemSize(toItem(j, indexes{activeShards: 16, createdShards: 16}))
	return (max(before, after) + 1023) / 1024
}

// TestAHeartbeatsWriteUnitsDoNotGrowWithTheInput: a heartbeat on a job
// with a 1 MB input costs no more than on one with a 1 KB input (which
// is kept inline, so it may cost one unit more than the pointer), and the
// same from 100 KB to 4 MB: the record holds a pointer, not the input.
func TestAHeartbeatsWriteUnitsDoNotGrowWithTheInput(t *testing.T) {
	small := heartbeatUnits(t, 1<<10)
	var got []string
	for _, n := range []int{100 << 10, 1 << 20, 4 << 20} {
		u := heartbeatUnits(t, n)
		got = append(got, fmt.Sprintf("%d KiB: %d", n>>10, u))
		if u > small || u != heartbeatUnits(t, 100<<10) {
			t.Errorf("a heartbeat with a %d-byte input costs %d write units, with 1 KiB %d", n, u, small)
		}
	}
	if small > 2 {
		t.Errorf("a heartbeat with a 1 KiB input costs %d write units, want at most 2", small)
	}
	t.Logf("write units per heartbeat: 1 KiB: %d, %s", small, strings.Join(got, ", "))
}
