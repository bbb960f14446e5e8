package quota

import (
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// maxItemBytes is DynamoDB's item size limit
// (https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/ServiceQuotas.html#limits-items).
const maxItemBytes = 400 << 10

// itemSize is the size DynamoDB counts for an item
// (https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/CapacityUnitCalculations.html):
// each attribute's name in UTF-8 bytes plus its value's size. It is
// pkg/dynamodb's count (dynamodb.ItemSize), kept here rather than
// imported: internal/awstest starts the front, and pkg/dynamodb's own
// in-package tests import internal/awstest, so the front cannot import
// pkg/dynamodb. TestTheFrontCountsItemsAsTheStoreDoes holds the two
// counts, and the two limits, equal.
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
