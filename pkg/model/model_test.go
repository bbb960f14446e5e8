package model_test

import (
	"testing"

	"github.com/aijobs/aijobs/pkg/job"
	"github.com/aijobs/aijobs/pkg/model"
)

// A provider that reports negative counts (a bug, or a hostile server)
// must never lower what a job has spent: a negative cost would lift its
// budget. Found by the providers' fuzz targets.
func TestNegativeUsageCostsNothing(t *testing.T) {
	p, _ := job.PricePerMillion("100", "400")
	for _, u := range []model.Usage{{InputTokens: -5, OutputTokens: -1}, {InputTokens: -8}, {OutputTokens: -3}} {
		if c := u.Cost(p); c != 0 {
			t.Errorf("%+v costs %d, want 0", u, c)
		}
	}
	if c := (model.Usage{InputTokens: -5, OutputTokens: 10}).Cost(p); c != p.Cost(0, 10) {
		t.Errorf("a negative input count took %d off the output's cost", p.Cost(0, 10)-c)
	}
}
