package emf_test

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/aijobs/aijobs/pkg/emf"
)

type clock struct{ t time.Time }

func (c clock) Now() time.Time { return c.t }

func TestEmitWritesOneEMFLine(t *testing.T) {
	var buf bytes.Buffer
	w := emf.New(&buf, clock{time.UnixMilli(1700000000123)})
	w.Emit("JobsFailed", 1, "Count", map[string]string{"ErrorClass": "rate_limited"})
	w.Emit("CostCents", 0.25, "None", nil)
	lines := bytes.Split(bytes.TrimSpace(buf.Bytes()), []byte("\n"))
	if len(lines) != 2 {
		t.Fatalf("lines = %d", len(lines))
	}
	var first struct {
		AWS struct {
			Timestamp         int64
			CloudWatchMetrics []struct {
				Namespace  string
				Dimensions [][]string
				Metrics    []struct{ Name, Unit string }
			}
		} `json:"_aws"`
		JobsFailed float64
		ErrorClass string
	}
	if err := json.Unmarshal(lines[0], &first); err != nil {
		t.Fatal(err)
	}
	d := first.AWS.CloudWatchMetrics[0]
	if first.AWS.Timestamp != 1700000000123 || d.Namespace != "aijobs" || d.Dimensions[0][0] != "ErrorClass" ||
		d.Metrics[0].Name != "JobsFailed" || d.Metrics[0].Unit != "Count" || first.JobsFailed != 1 || first.ErrorClass != "rate_limited" {
		t.Fatalf("line = %s", lines[0])
	}
	var second map[string]any
	_ = json.Unmarshal(lines[1], &second)
	if second["CostCents"] != 0.25 {
		t.Fatalf("line = %s", lines[1])
	}
	dims := second["_aws"].(map[string]any)["CloudWatchMetrics"].([]any)[0].(map[string]any)["Dimensions"].([]any)
	if len(dims) != 1 || len(dims[0].([]any)) != 0 {
		t.Fatalf("a metric without dimensions needs one empty dimension set: %s", lines[1])
	}
}
