package finish

import (
	"crypto/sha256"
	"encoding/hex"

	"github.com/aijobs/aijobs/pkg/job"
)

// MaxInlineResult is the largest answer kept on the record; a larger one
// is put in the payload store and the record points at it. 32 KiB keeps
// a succeeded record small enough that every later write to it stays a
// few dozen write units, far under DynamoDB's 400 KB item beside an
// inline input (at most 8 KiB), and a poll far under Lambda's 6 MB response
// (docs/payloads.md, "Answers", says why this size). The worker and the
// batch lane's collector both keep to it.
const MaxInlineResult = 32 << 10

// ResultKey is where owner's attempt at job id (or a batch's stay,
// job.BatchOwner) puts its answer: one key per attempt (owners are
// unique), so two attempts never overwrite each other's answer, and the
// one the record points at is the one its succeed wrote.
func ResultKey(id, owner string) string { return "results/" + id + "/" + owner }

// ResultRef is the ref a record keeps of body put at key: what proves
// the object read back is the one written.
func ResultRef(key string, body []byte) *job.Payload {
	sum := sha256.Sum256(body)
	return &job.Payload{Key: key, Size: int64(len(body)), SHA256: "sha256:" + hex.EncodeToString(sum[:])}
}
