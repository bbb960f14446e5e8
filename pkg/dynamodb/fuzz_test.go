package dynamodb

import (
	"encoding/base64"
	"encoding/json"
	"math"
	"reflect"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// wireValue reads one attribute value in DynamoDB's JSON wire format
// ({"S":"x"}, {"N":"1"}, {"L":[...]}, ...), as GetItem, Query and the
// conditional failures' ALL_OLD items carry them.
func wireValue(raw json.RawMessage) (types.AttributeValue, bool) {
	var v map[string]json.RawMessage
	if json.Unmarshal(raw, &v) != nil || len(v) != 1 {
		return nil, false
	}
	for typ, body := range v {
		var s string
		var ss []string
		var b bool
		switch typ {
		case "S":
			ok := json.Unmarshal(body, &s) == nil
			return &types.AttributeValueMemberS{Value: s}, ok
		case "N":
			ok := json.Unmarshal(body, &s) == nil
			return &types.AttributeValueMemberN{Value: s}, ok
		case "B":
			if json.Unmarshal(body, &s) != nil {
				return nil, false
			}
			d, err := base64.StdEncoding.DecodeString(s)
			return &types.AttributeValueMemberB{Value: d}, err == nil
		case "SS":
			ok := json.Unmarshal(body, &ss) == nil
			return &types.AttributeValueMemberSS{Value: ss}, ok
		case "NS":
			ok := json.Unmarshal(body, &ss) == nil
			return &types.AttributeValueMemberNS{Value: ss}, ok
		case "BOOL":
			ok := json.Unmarshal(body, &b) == nil
			return &types.AttributeValueMemberBOOL{Value: b}, ok
		case "NULL":
			ok := json.Unmarshal(body, &b) == nil
			return &types.AttributeValueMemberNULL{Value: b}, ok
		case "L":
			var items []json.RawMessage
			if json.Unmarshal(body, &items) != nil {
				return nil, false
			}
			l := &types.AttributeValueMemberL{}
			for _, it := range items {
				e, ok := wireValue(it)
				if !ok {
					return nil, false
				}
				l.Value = append(l.Value, e)
			}
			return l, true
		case "M":
			m, ok := wireItem(body)
			return &types.AttributeValueMemberM{Value: m}, ok
		}
	}
	return nil, false
}

// wireItem reads an item in DynamoDB's JSON wire format.
func wireItem(raw []byte) (map[string]types.AttributeValue, bool) {
	var attrs map[string]json.RawMessage
	if json.Unmarshal(raw, &attrs) != nil {
		return nil, false
	}
	it := map[string]types.AttributeValue{}
	for name, v := range attrs {
		av, ok := wireValue(v)
		if !ok {
			return nil, false
		}
		it[name] = av
	}
	return it, true
}

// FuzzDecodeItem feeds the stored item decoder (fromItem) every item the
// fuzzer can write in DynamoDB's JSON wire format (issue 9, section 3): a
// hand-edited, truncated or future-layout record must be refused with an
// error (the store answers it as an unreadable record, internal), never
// panic; a record it accepts has an id and a valid state, and survives
// being written back (toItem) and read again unchanged. Seeds are in
// testdata/fuzz/FuzzDecodeItem; `make fuzz` runs it for FUZZTIME.
func FuzzDecodeItem(f *testing.F) {
	f.Fuzz(func(t *testing.T, raw []byte) {
		it, ok := wireItem(raw)
		if !ok {
			return // not an item: nothing DynamoDB could answer
		}
		_ = tokenApplied(it, "w1#succeed")
		j, err := fromItem(it)
		if err != nil {
			return
		}
		if j.ID == "" || !j.State.Valid() {
			t.Fatalf("decoded a record without an id or a valid state: %+v", j)
		}
		again, err := fromItem(toItem(j, indexes{activeShards: 4, createdShards: 4}))
		if err != nil {
			t.Fatalf("a decoded record does not decode once written back: %v\n%+v", err, j)
		}
		if math.IsNaN(j.Progress) && math.IsNaN(again.Progress) {
			j.Progress, again.Progress = 0, 0
		}
		if !reflect.DeepEqual(j, again) {
			t.Fatalf("written back and read again, the record changed:\n%+v\n%+v", j, again)
		}
	})
}
