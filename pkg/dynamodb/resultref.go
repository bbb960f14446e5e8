package dynamodb

import (
	"encoding/json"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/aijobs/aijobs/pkg/job"
)

// resultRefJSON is result_ref's value: the answer's place in the payload
// store as JSON, as pending is kept (one attribute a poll projects and a
// succeed sets or removes whole); "" when the answer is inline.
func resultRefJSON(p *job.Payload) string {
	if p == nil {
		return ""
	}
	b, _ := json.Marshal(p) // strings and a number: cannot fail
	return string(b)
}

// resultRef reads result_ref; a value that does not decode fails the
// record's decoding rather than read as an answer that never was.
func (d *decoder) resultRef() *job.Payload {
	s := d.str(aResultRef)
	if s == "" {
		return nil
	}
	var p job.Payload
	if err := json.Unmarshal([]byte(s), &p); err != nil || p.Key == "" {
		d.fail(aResultRef, fmt.Errorf("not a payload reference: %q", s))
		return nil
	}
	return &p
}

// resultAttributes adds a job's answer to it: inline or by its ref, and
// the model and lane that gave it; each only when set.
func resultAttributes(it map[string]types.AttributeValue, j job.Job) {
	for k, v := range map[string]string{aResult: string(j.Result), aResultRef: resultRefJSON(j.ResultRef),
		aResultModel: j.ResultModel, aResultLane: string(j.ResultLane)} {
		if v != "" {
			it[k] = avS(v)
		}
	}
}
