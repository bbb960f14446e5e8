package worker

import (
	"github.com/aijobs/aijobs/pkg/model"
	"github.com/aijobs/aijobs/pkg/wire"
)

// resultOf is what a job that r answered shows as its result: the public
// wire.Result, not the provider seam's own type, so that a change to
// pkg/model cannot reshape what clients read.
func resultOf(r model.Response) wire.Result {
	return wire.Result{Output: r.Output, Model: r.Model, FinishReason: r.FinishReason,
		Usage: wire.Usage{InputTokens: r.Usage.InputTokens, OutputTokens: r.Usage.OutputTokens, Estimated: r.Usage.Estimated}}
}
