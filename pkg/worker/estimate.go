package worker

import "github.com/aijobs/aijobs/pkg/job"

// WorstCase is the most an attempt can cost: every output token the request
// allows at the output price, plus an over-estimate of the prompt (one
// token per two bytes of content, and a few per message). An attempt starts
// only if the remaining budget covers it, so a job never overruns its budget
// by more than the estimate's error on the prompt side.
func WorstCase(p job.Price, in job.Input) job.Nanocents {
	var bytes int64
	for _, m := range in.Messages {
		bytes += int64(len(m.Content))
	}
	prompt := (bytes+1)/2 + 8*int64(len(in.Messages))
	return p.Cost(prompt, int64(in.MaxTokens))
}
