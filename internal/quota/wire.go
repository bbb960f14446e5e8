package quota

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"slices"
	"sort"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// item is a DynamoDB item as it travels on the wire (JSON 1.0): attribute
// names to their typed values, kept raw so that what the front passes on
// is byte for byte what it was handed.
type item map[string]json.RawMessage

// size is what DynamoDB counts for it, by the store's own count
// (itemSize): the front and the store must agree on what is too large. A nil item (none stored) is 0 bytes; a value the front cannot
// read counts its JSON's length, which is never less.
func (it item) size() int {
	if it == nil {
		return 0
	}
	m := make(map[string]types.AttributeValue, len(it))
	for name, raw := range it {
		v, err := value(raw)
		if err != nil {
			v = &types.AttributeValueMemberB{Value: raw}
		}
		m[name] = v
	}
	return itemSize(m)
}

// only is the part of it named by names (a key, an index's projection).
func (it item) only(names []string) item {
	out := item{}
	for _, n := range names {
		if v, ok := it[n]; ok {
			out[n] = v
		}
	}
	return out
}

// has reports whether it holds every one of names (an index holds an item
// only when the item has all of the index's key attributes).
func (it item) has(names []string) bool {
	return it != nil && !slices.ContainsFunc(names, func(n string) bool { _, ok := it[n]; return !ok })
}

// id names it as JSON with sorted names (encoding/json sorts a map's
// keys), so one key is always one name.
func (it item) id() string {
	b, _ := json.Marshal(it)
	return string(b)
}

// equal reports whether a and b hold the same attributes with the same
// values; both nil is equal, one nil is not.
func equal(a, b item) bool {
	if (a == nil) != (b == nil) || len(a) != len(b) {
		return false
	}
	for k, v := range a {
		w, ok := b[k]
		if !ok || !bytes.Equal(v, w) && canonical(v) != canonical(w) {
			return false
		}
	}
	return true
}

// canonical is raw re-encoded (a map's keys sorted, no spaces), so an
// item read back compares equal to the one written.
func canonical(raw json.RawMessage) string {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return string(raw)
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// display is a partition key value as the meter names it: a string or
// number as itself, a binary in base64.
func display(raw json.RawMessage) string {
	var v struct {
		S, N *string
		B    []byte
	}
	if json.Unmarshal(raw, &v) != nil {
		return string(raw)
	}
	switch {
	case v.S != nil:
		return *v.S
	case v.N != nil:
		return *v.N
	case v.B != nil:
		return base64.StdEncoding.EncodeToString(v.B)
	}
	return string(raw)
}

// value reads one wire value into the SDK's type, which dynamodb.ItemSize
// counts.
func value(raw json.RawMessage) (types.AttributeValue, error) {
	var v struct {
		S, N       *string
		B          []byte
		BOOL, NULL *bool
		SS, NS     []string
		BS         [][]byte
		L          []json.RawMessage
		M          map[string]json.RawMessage
	}
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil, err
	}
	switch {
	case v.S != nil:
		return &types.AttributeValueMemberS{Value: *v.S}, nil
	case v.N != nil:
		return &types.AttributeValueMemberN{Value: *v.N}, nil
	case v.B != nil:
		return &types.AttributeValueMemberB{Value: v.B}, nil
	case v.BOOL != nil:
		return &types.AttributeValueMemberBOOL{Value: *v.BOOL}, nil
	case v.NULL != nil:
		return &types.AttributeValueMemberNULL{Value: *v.NULL}, nil
	case v.SS != nil:
		return &types.AttributeValueMemberSS{Value: v.SS}, nil
	case v.NS != nil:
		return &types.AttributeValueMemberNS{Value: v.NS}, nil
	case v.BS != nil:
		return &types.AttributeValueMemberBS{Value: v.BS}, nil
	case v.L != nil:
		l := make([]types.AttributeValue, 0, len(v.L))
		for _, e := range v.L {
			ev, err := value(e)
			if err != nil {
				return nil, err
			}
			l = append(l, ev)
		}
		return &types.AttributeValueMemberL{Value: l}, nil
	case v.M != nil:
		m := make(map[string]types.AttributeValue, len(v.M))
		for k, e := range v.M {
			ev, err := value(e)
			if err != nil {
				return nil, err
			}
			m[k] = ev
		}
		return &types.AttributeValueMemberM{Value: m}, nil
	}
	return nil, errors.New("quota: an attribute value of no known type: " + string(raw))
}

// sortedIDs is the ids of items, sorted and without repeats: the order in
// which a write takes its items' locks, so two writes never wait on each
// other crosswise.
func sortedIDs(ids []string) []string {
	out := slices.Clone(ids)
	sort.Strings(out)
	return slices.Compact(out)
}

// pkName resolves the attribute an expression names (a #placeholder
// through names).
func pkName(expr string, names map[string]string) string {
	expr = strings.TrimSpace(expr)
	if n, ok := names[expr]; ok {
		return n
	}
	return expr
}
