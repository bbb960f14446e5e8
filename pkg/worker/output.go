package worker

import (
	"github.com/aijobs/aijobs/pkg/job"
	"github.com/aijobs/aijobs/pkg/model"
)

// checked is how a paid call that answered resp (err nil) or failed (class,
// err) ends once its answer is held to the input's response_format
// (model.CheckOutput): an answer the schema refuses is an invalid_output
// failure, which a route may fall back on and an attempt retries. Every
// place the worker takes an answer (a call, a resumed generation, a
// detached one read back) goes through it, after the call was paid.
func checked(in job.Input, resp model.Response, class job.ErrorClass, err error) (job.ErrorClass, error) {
	if err != nil {
		return class, err
	}
	if err := model.CheckOutput(in, resp); err != nil {
		return job.InvalidOutput, err
	}
	return class, nil
}
