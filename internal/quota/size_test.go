package quota

import (
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/aijobs/aijobs/pkg/dynamodb"
)

// The front refuses what the store refuses: its count of an item and its
// limit are pkg/dynamodb's, for every kind of value (itemSize says why
// they are kept apart).
func TestTheFrontCountsItemsAsTheStoreDoes(t *testing.T) {
	if maxItemBytes != dynamodb.MaxItemBytes {
		t.Fatalf("the front's item limit is %d bytes, the store's %d", maxItemBytes, dynamodb.MaxItemBytes)
	}
	s := func(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
	n := func(v string) types.AttributeValue { return &types.AttributeValueMemberN{Value: v} }
	items := []map[string]types.AttributeValue{
		{},
		{"pk": s("tenant#jwt:a"), "é": s("ünïcode"), "big": s(strings.Repeat("x", 5000))},
		{"n0": n("0"), "n1": n("-0.00120"), "n2": n("12345678901234567890"), "n3": n("1.5E+10"), "n4": n("+7")},
		{"b": &types.AttributeValueMemberB{Value: []byte{0, 1, 2}}, "t": &types.AttributeValueMemberBOOL{Value: true},
			"z": &types.AttributeValueMemberNULL{Value: true}},
		{"ss": &types.AttributeValueMemberSS{Value: []string{"a", "bc", "def"}}, "ns": &types.AttributeValueMemberNS{Value: []string{"1", "100", "3.14"}},
			"bs": &types.AttributeValueMemberBS{Value: [][]byte{{1}, {2, 3}}}},
		{"l": &types.AttributeValueMemberL{Value: []types.AttributeValue{s("a"), n("12"), &types.AttributeValueMemberL{}}},
			"m": &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{"k": s("v"), "inner": &types.AttributeValueMemberM{
				Value: map[string]types.AttributeValue{"x": n("99.5")}}}}},
	}
	for i, it := range items {
		if got, want := itemSize(it), dynamodb.ItemSize(it); got != want {
			t.Errorf("item %d: the front counts %d bytes, the store %d", i, got, want)
		}
	}
}
