package model_test

import (
	"testing"

	"github.com/aijobs/aijobs/pkg/job"
	"github.com/aijobs/aijobs/pkg/model"
	"github.com/aijobs/aijobs/pkg/model/modeltest"
)

// A call with an image and a PDF whose answer was lost is billed at
// least an image's and a page's worst case (job.ImageTokens,
// job.PageTokens): a hold is never below what the call can cost.
func TestALostCallWithPartsIsBilledTheirWorstCase(t *testing.T) {
	r := model.Request{Messages: modeltest.PartsMessages("c.pdf"), MaxTokens: 64}
	u := model.Unanswered(r, false)
	if least := int64(job.ImageTokens + job.PageTokens); u.InputTokens < least || !u.Estimated {
		t.Fatalf("Unanswered = %+v, want at least %d input tokens, estimated", u, least)
	}
}
