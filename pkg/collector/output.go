package collector

import (
	"encoding/json"

	"github.com/aijobs/aijobs/pkg/job"
	"github.com/aijobs/aijobs/pkg/model"
)

// conforms reports whether resp answers job j's input as it asked
// (model.CheckOutput): a batch answer its response_format's schema
// refuses is invalid_output, as a call's is. An input that no longer
// decodes asked for nothing the collector can check.
func conforms(j job.Job, resp model.Response) bool {
	var in job.Input
	if json.Unmarshal(j.Input, &in) != nil {
		return true
	}
	return model.CheckOutput(in, resp) == nil
}
