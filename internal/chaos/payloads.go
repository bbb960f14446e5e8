package chaos

import (
	"context"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/aijobs/aijobs/pkg/job"
	"github.com/aijobs/aijobs/pkg/s3"
)

// PayloadCount is what the run left in the payload store (docs/chaos.md,
// "Orphaned objects"): the objects, those a record points at, those no
// record points at (a create whose object was written and whose record
// never was: the lifecycle rule of their prefix expires them), and the
// two that break the run: a record pointing at an object that is not
// there, and an object under no prefix a lifecycle rule expires.
type PayloadCount struct {
	Objects, Referenced, Unreferenced int
	Dangling, Outside                 []string
}

// expiring are the prefixes the stack's lifecycle rules expire
// (infra/payloads.go).
var expiring = []string{"inputs/", "results/", "uploads/"}

// payloads lists the payload bucket and holds it to the records.
func (h *harness) payloads(ctx context.Context, records map[string]job.Job) (PayloadCount, error) {
	c := s3.NewClient(h.setup.AWS)
	keys := map[string]bool{}
	var token *string
	for {
		out, err := c.ListObjectsV2(ctx, &awss3.ListObjectsV2Input{Bucket: aws.String(h.cfg.PayloadBucket), ContinuationToken: token})
		if err != nil {
			return PayloadCount{}, fmt.Errorf("list the payload bucket: %w", err)
		}
		for _, o := range out.Contents {
			keys[aws.ToString(o.Key)] = true
		}
		if !aws.ToBool(out.IsTruncated) {
			break
		}
		token = out.NextContinuationToken
	}
	return countPayloads(keys, records), nil
}

// countPayloads holds the objects keys to the records.
func countPayloads(keys map[string]bool, records map[string]job.Job) PayloadCount {
	pc := PayloadCount{Objects: len(keys)}
	pointed := map[string]bool{}
	for id, j := range records {
		if j.InputRef == nil {
			continue
		}
		pointed[j.InputRef.Key] = true
		if !keys[j.InputRef.Key] {
			pc.Dangling = append(pc.Dangling, id)
		}
	}
	for k := range keys {
		switch {
		case pointed[k]:
			pc.Referenced++
		case !underAny(k, expiring):
			pc.Outside = append(pc.Outside, k)
		default:
			pc.Unreferenced++
		}
	}
	return pc
}

func underAny(key string, prefixes []string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(key, p) {
			return true
		}
	}
	return false
}

// broken says the payload store breaks the run: a dangling pointer, or an
// object nothing will ever delete.
func (pc PayloadCount) broken() bool { return len(pc.Dangling) > 0 || len(pc.Outside) > 0 }

// line is the report's line for pc.
func (pc PayloadCount) line() string {
	s := fmt.Sprintf("payload store: %d objects, %d a record points at, %d no record points at (their prefix's lifecycle rule expires them)",
		pc.Objects, pc.Referenced, pc.Unreferenced)
	if len(pc.Dangling) > 0 {
		s += fmt.Sprintf("; BROKEN: %d records point at a missing object: %s", len(pc.Dangling), strings.Join(pc.Dangling, ", "))
	}
	if len(pc.Outside) > 0 {
		s += fmt.Sprintf("; BROKEN: %d objects under no expiring prefix: %s", len(pc.Outside), strings.Join(pc.Outside, ", "))
	}
	return s + "\n"
}
