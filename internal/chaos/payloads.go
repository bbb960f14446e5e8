package chaos

import (
	"context"
	"fmt"
	"slices"
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
// there, and an object under no prefix a lifecycle rule expires. Inputs
// (inputs/) and answers (results/) are counted alike; Results are the
// objects under results/ and UnreferencedResults those no record points
// at (an attempt whose succeed was refused: docs/payloads.md, "Answers").
//
// ByLink are the succeeded jobs whose answer is a link (result_ref); each
// is read back through the payload store (kumo checks no presigned
// signature, so the link proves nothing) and held to the record's size and
// SHA-256: LinksChecked matched, BadAnswers did not (missing, another
// size or digest, or unreadable), and break the run: a paid answer lost.
type PayloadCount struct {
	Objects, Referenced, Unreferenced int
	Results, UnreferencedResults      int
	Dangling, Outside                 []string
	ByLink, LinksChecked              int
	BadAnswers                        []string
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
	pc := countPayloads(keys, records)
	checkAnswers(ctx, s3.NewPayloads(c, h.cfg.PayloadBucket), records, &pc)
	return pc, nil
}

// answerReader reads an object of the payload store, as pkg/s3's Payloads.
type answerReader interface {
	Get(ctx context.Context, key string, limit int64) ([]byte, error)
}

// checkAnswers reads back every succeeded job's answer by link. A read
// is retried a few times: the harness's own S3 client takes no faults,
// but kumo shares the machine with the run.
func checkAnswers(ctx context.Context, store answerReader, records map[string]job.Job, pc *PayloadCount) {
	for id, j := range records {
		if j.State != job.Succeeded || j.ResultRef == nil {
			continue
		}
		pc.ByLink++
		var err error
		for range 3 {
			var body []byte
			if body, err = store.Get(ctx, j.ResultRef.Key, j.ResultRef.Size); err == nil {
				err = j.ResultRef.Check(body)
				break
			}
		}
		if err != nil {
			pc.BadAnswers = append(pc.BadAnswers, fmt.Sprintf("%s: %v", id, err))
			continue
		}
		pc.LinksChecked++
	}
	slices.Sort(pc.BadAnswers)
}

// countPayloads holds the objects keys to the records.
func countPayloads(keys map[string]bool, records map[string]job.Job) PayloadCount {
	pc := PayloadCount{Objects: len(keys)}
	pointed := map[string]bool{}
	for id, j := range records {
		for _, ref := range []*job.Payload{j.InputRef, j.ResultRef} {
			if ref == nil {
				continue
			}
			pointed[ref.Key] = true
			if !keys[ref.Key] {
				pc.Dangling = append(pc.Dangling, id)
			}
		}
	}
	slices.Sort(pc.Dangling)
	for k := range keys {
		result := strings.HasPrefix(k, "results/")
		if result {
			pc.Results++
		}
		switch {
		case pointed[k]:
			pc.Referenced++
		case !underAny(k, expiring):
			pc.Outside = append(pc.Outside, k)
		default:
			pc.Unreferenced++
			if result {
				pc.UnreferencedResults++
			}
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
func (pc PayloadCount) broken() bool {
	return len(pc.Dangling) > 0 || len(pc.Outside) > 0 || len(pc.BadAnswers) > 0
}

// line is the report's line for pc.
func (pc PayloadCount) line() string {
	s := fmt.Sprintf("payload store: %d objects (%d answers under results/), %d a record points at, %d no record points at (%d of them answers; their prefix's lifecycle rule expires them)",
		pc.Objects, pc.Results, pc.Referenced, pc.Unreferenced, pc.UnreferencedResults)
	s += fmt.Sprintf("; %d succeeded jobs have their answer by link, %d read back through the store at the recorded size and SHA-256",
		pc.ByLink, pc.LinksChecked)
	if len(pc.BadAnswers) > 0 {
		s += fmt.Sprintf("; BROKEN: %d answers not as recorded: %s", len(pc.BadAnswers), strings.Join(pc.BadAnswers, "; "))
	}
	if len(pc.Dangling) > 0 {
		s += fmt.Sprintf("; BROKEN: %d records point at a missing object: %s", len(pc.Dangling), strings.Join(pc.Dangling, ", "))
	}
	if len(pc.Outside) > 0 {
		s += fmt.Sprintf("; BROKEN: %d objects under no expiring prefix: %s", len(pc.Outside), strings.Join(pc.Outside, ", "))
	}
	return s + "\n"
}
