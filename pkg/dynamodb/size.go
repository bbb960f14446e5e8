package dynamodb

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// DynamoDB's size limits
// (https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/ServiceQuotas.html#limits-items):
// an item over them is refused with a ValidationException that no retry
// can cure. The store checks a new record against them before writing, so
// the caller learns it is too large (job.CodeTooLarge) rather than that
// the store is unavailable, and nothing is half written. kumo enforces
// neither (docs/architecture.md), which is one more reason to check here.
const (
	maxItemBytes         = 400 << 10 // names and values, UTF-8
	maxPartitionKeyBytes = 2048      // the table's and every index's
	// growth is the room a new record keeps for what its own life adds
	// (the settled tokens of every attempt, an error detail, the index
	// keys of its end, the result model): without it a record created just
	// under the limit could not record what its attempts cost. The
	// result itself is kept inline only up to 32 KiB, and one the
	// record still has no room for goes to the payload store
	// (docs/payloads.md, "Answers"). It is at least
	// lifeRoom of the most attempts a create may ask (8 by default:
	// 3 KiB); a record allowed more keeps lifeRoom of its own.
	growth = 4 << 10
	// attemptRoom is the most one attempt leaves on the record for good:
	// its settled tokens, which stay because they are what makes a
	// retried finish, raise or write-off count once however late it lands
	// (item.go). They are a finish, or a refused finish's cost add
	// ("<owner>#release+cost", 35 bytes with the worker's 22-byte lease
	// owner, or "<owner>#replaced" for a written-off one's), a write-off (31) and a raise per fallback rung
	// ("<owner>#hold<total>", at most 46): 256 bytes cover four raises.
	// Measured (TestARecordAtTheLimitSurvivesItsReplays): 26 to 35 bytes
	// for a plain attempt, 184 for one that raised twice, was written off
	// and then settled late.
	attemptRoom = 256
	// endRoom is what a life adds once, whatever its attempts: the lease,
	// the backoff, the error class and a detail of up to 200 bytes (the
	// worker's cut), the failure index keys, the expiry, the result model
	// and lane, the callback's delivery counts, the saving (one number,
	// at most 19 bytes with its name), a pending generation (about 200
	// bytes, its id at most job.MaxPendingID), and the batch lane's marks
	// (enl_pk, enl_ms and batch: under 100 bytes with a route and a batch
	// id of 30 bytes each). Each replaces the one before it, so lives do
	// not add them up.
	endRoom = 1536
)

// MaxItemBytes is DynamoDB's item size limit, and ItemSize its count of an
// item: exported for internal/quota's test (TestTheFrontCountsItemsAsTheStoreDoes),
// which holds the front's own copy of the count equal to the store's: the
// front cannot import this package, whose in-package tests import
// internal/awstest, which starts the front.
const MaxItemBytes = maxItemBytes

// ItemSize is itemSize for internal/quota (MaxItemBytes says why).
func ItemSize(it map[string]types.AttributeValue) int { return itemSize(it) }

// lifeRoom is the room a life of n attempts (a create's max_attempts, a
// replay's fresh attempts) may need on its record: every finishing write of
// the life must fit, or the cost it settles is lost with it.
func lifeRoom(attempts int) int { return endRoom + max(attempts, 0)*attemptRoom }

// overLimit is a record DynamoDB would refuse for its size.
func overLimit(what string, size, limit int) error {
	return tooLarge(fmt.Errorf("dynamodb: %s is %d bytes, over the %d-byte limit", what, size, limit))
}

// checkSize refuses a new item over the item limit less the room its
// attempts need (attempts of them), or whose tenant (the tenant index's
// partition key) is over the key limit.
func checkSize(it map[string]types.AttributeValue, attempts int) error {
	if v, ok := it[aTenant].(*types.AttributeValueMemberS); ok && len(v.Value) > maxPartitionKeyBytes {
		return overLimit("the tenant", len(v.Value), maxPartitionKeyBytes)
	}
	room := max(growth, lifeRoom(attempts))
	if n := itemSize(it); n > maxItemBytes-room {
		return overLimit("the item with room for its attempts", n, maxItemBytes-room)
	}
	return nil
}

// roomForLife refuses a replay of n fresh attempts on a record (it, as
// stored) that has no room left for what they may add. Attempts within a
// life are bounded by max_attempts, so a life's growth is; replays are
// not bounded, and each leaves its attempts' tokens behind, so this is
// where a record's growth stops: with a refusal an operator can read
// (job.CodeTooLarge), before any write, rather than a finishing write
// DynamoDB refuses later for the item's size, which would lose its cost.
func roomForLife(it map[string]types.AttributeValue, n int) error {
	if size, room := itemSize(it), lifeRoom(n); size > maxItemBytes-room {
		return overLimit("the record with room for another life of "+strconv.Itoa(n)+" attempts", size, maxItemBytes-room)
	}
	return nil
}

// itemSize is the size DynamoDB counts for an item
// (https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/CapacityUnitCalculations.html):
// each attribute's name in UTF-8 bytes plus its value's size.
func itemSize(it map[string]types.AttributeValue) int {
	n := 0
	for name, v := range it {
		n += len(name) + valueSize(v)
	}
	return n
}

// valueSize is one value's size: a string its UTF-8 bytes, a binary its
// raw bytes, a number one byte per two significant digits plus one, null
// and Boolean one byte, a set the sum of its members, a list or map 3 bytes
// plus each element (and a map key's name) plus one byte per element.
func valueSize(v types.AttributeValue) int {
	switch v := v.(type) {
	case *types.AttributeValueMemberS:
		return len(v.Value)
	case *types.AttributeValueMemberN:
		return numberSize(v.Value)
	case *types.AttributeValueMemberB:
		return len(v.Value)
	case *types.AttributeValueMemberBOOL, *types.AttributeValueMemberNULL:
		return 1
	case *types.AttributeValueMemberSS:
		return sum(v.Value, func(s string) int { return len(s) })
	case *types.AttributeValueMemberNS:
		return sum(v.Value, numberSize)
	case *types.AttributeValueMemberBS:
		return sum(v.Value, func(b []byte) int { return len(b) })
	case *types.AttributeValueMemberL:
		n := 3
		for _, e := range v.Value {
			n += 1 + valueSize(e)
		}
		return n
	case *types.AttributeValueMemberM:
		n := 3
		for k, e := range v.Value {
			n += 1 + len(k) + valueSize(e)
		}
		return n
	}
	return 0
}

// numberSize counts the significant digits of a number literal, leading
// and trailing zeroes trimmed (an exponent and the sign take no digits),
// rounded up to whole bytes, plus one; zero counts one digit.
func numberSize(s string) int {
	s = strings.TrimLeft(s, "+-")
	if i := strings.IndexAny(s, "eE"); i >= 0 {
		s = s[:i]
	}
	s = strings.Replace(s, ".", "", 1)
	digits := max(len(strings.Trim(s, "0")), 1) // zero is one digit
	return (digits+1)/2 + 1
}

func sum[T any](xs []T, size func(T) int) int {
	n := 0
	for _, x := range xs {
		n += size(x)
	}
	return n
}
