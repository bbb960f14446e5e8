package model

import (
	"fmt"

	"github.com/aijobs/aijobs/pkg/job"
)

// CheckOutput is nil when resp answers in as it asked: an input without a
// response_format takes any answer; one with it takes only JSON its
// schema accepts. Otherwise it is an invalid_output error carrying
// resp's usage, the call having been paid for all the same. The worker
// checks every call's answer (so a route may fall back on the class,
// job.Route.FallbackOn) and the collector every batch answer, before
// either records a success (docs/providers.md, "Structured output").
// The schema is compiled for each check: checks are one per answer, and
// nothing is kept between them.
func CheckOutput(in job.Input, resp Response) error {
	f := in.ResponseFormat
	if f == nil {
		return nil
	}
	schema, err := f.Compile()
	if err == nil {
		err = job.Conforms(schema, resp.Output)
	}
	if err != nil {
		d := err.Error()
		if len(d) > 200 {
			d = d[:200]
		}
		return &Error{Class: job.InvalidOutput, Detail: d, Usage: resp.Usage, Err: fmt.Errorf("model: %w", err)}
	}
	return nil
}
