package dynamodb

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	ddb "github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/aijobs/aijobs/pkg/api"
	"github.com/aijobs/aijobs/pkg/job"
	"github.com/aijobs/aijobs/pkg/settings"
	"github.com/aijobs/aijobs/pkg/wire"
)

// putCounter is a DynamoDB client that accepts every PutItem and counts
// them, as kumo does: kumo has no 400 KB item limit (docs/architecture.md),
// so the size rule is proven here, offline.
type putCounter struct {
	Client
	puts atomic.Int64
}

func (c *putCounter) PutItem(context.Context, *ddb.PutItemInput, ...func(*ddb.Options)) (*ddb.PutItemOutput, error) {
	c.puts.Add(1)
	return &ddb.PutItemOutput{}, nil
}

// newJob is the record a create body makes, through the API's own parser.
func newJob(t *testing.T, tenant, body string) job.Job {
	t.Helper()
	s := settings.Defaults()
	req, err := api.ParseCreate(tenant, "k", []byte(body), s.Limits)
	if err != nil {
		t.Fatalf("ParseCreate: %v", err)
	}
	return req.NewJob(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), time.Hour)
}

// TestCreateRefusesAnItemOverTheLimitBeforeWriting: a body of U+2028
// characters under the 256 KiB body limit is stored as JSON, where each
// becomes \u2028 (3 bytes become 6): the item would be over DynamoDB's
// 400 KB limit, which real DynamoDB refuses with a ValidationException
// (https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/ServiceQuotas.html#limits-items).
// The store refuses it itself, before any write, as job.CodeTooLarge.
func TestCreateRefusesAnItemOverTheLimitBeforeWriting(t *testing.T) {
	c := &putCounter{}
	st := New(c, "jobs", settings.Defaults())
	body := `{"input":{"messages":[{"role":"user","content":"` + strings.Repeat("\u2028", 87_000) + `"}]}}`
	j := newJob(t, "jwt:a", body)
	_, err := st.Create(t.Context(), j)
	if job.ErrorCode(err) != job.CodeTooLarge {
		t.Fatalf("Create: %v, want too_large", err)
	}
	if n := c.puts.Load(); n != 0 {
		t.Fatalf("%d PutItem calls for an item over the limit", n)
	}
	if strings.Contains(err.(*job.Error).Message, "ValidationException") {
		t.Errorf("message names an AWS error: %q", err)
	}

	// The same characters, fewer of them: under the limit, written.
	j = newJob(t, "jwt:a", `{"input":{"messages":[{"role":"user","content":"`+strings.Repeat("\u2028", 60_000)+`"}]}}`)
	if _, err := st.Create(t.Context(), j); err != nil || c.puts.Load() != 1 {
		t.Fatalf("Create under the limit: %v, %d puts", err, c.puts.Load())
	}
}

// TestCreateRefusesATenantOverTheKeyLimit: the tenant is the tenant
// index's partition key, which DynamoDB caps at 2048 bytes.
func TestCreateRefusesATenantOverTheKeyLimit(t *testing.T) {
	c := &putCounter{}
	st := New(c, "jobs", settings.Defaults())
	j := newJob(t, "jwt:"+strings.Repeat("t", maxPartitionKeyBytes), `{"input":{"messages":[{"role":"user","content":"x"}]}}`)
	if _, err := st.Create(t.Context(), j); job.ErrorCode(err) != job.CodeTooLarge || c.puts.Load() != 0 {
		t.Fatalf("Create: %v, %d puts", err, c.puts.Load())
	}
}

// TestItemSize follows DynamoDB's documented rules
// (https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/CapacityUnitCalculations.html):
// names and strings count their UTF-8 bytes; a number one byte per two
// significant digits plus one (leading and trailing zeroes trimmed); null
// and Boolean one byte; a list or map 3 bytes plus one per element.
func TestItemSize(t *testing.T) {
	s := func(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
	n := func(v string) types.AttributeValue { return &types.AttributeValueMemberN{Value: v} }
	for _, c := range []struct {
		name string
		item map[string]types.AttributeValue
		want int
	}{
		{"string", map[string]types.AttributeValue{"id": s("abc")}, 2 + 3},
		{"multi-byte string", map[string]types.AttributeValue{"é": s("\u2028")}, 2 + 3},
		{"number, 3 digits", map[string]types.AttributeValue{"n": n("123")}, 1 + 2 + 1},
		{"number, zeroes trimmed", map[string]types.AttributeValue{"n": n("-000120.500")}, 1 + 2 + 1},
		{"number zero", map[string]types.AttributeValue{"n": n("0")}, 1 + 1 + 1},
		{"bool and null", map[string]types.AttributeValue{"b": &types.AttributeValueMemberBOOL{Value: true},
			"z": &types.AttributeValueMemberNULL{Value: true}}, 2 + 2},
		{"binary", map[string]types.AttributeValue{"b": &types.AttributeValueMemberB{Value: []byte{1, 2, 3}}}, 1 + 3},
		{"string set", map[string]types.AttributeValue{"ss": &types.AttributeValueMemberSS{Value: []string{"a", "bc"}}}, 2 + 3},
		{"list", map[string]types.AttributeValue{"l": &types.AttributeValueMemberL{Value: []types.AttributeValue{s("ab"), n("5")}}},
			1 + 3 + (1 + 2) + (1 + 2)},
		{"map", map[string]types.AttributeValue{"m": &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{"k": s("v")}}},
			1 + 3 + (1 + 1 + 1)},
	} {
		if got := itemSize(c.item); got != c.want {
			t.Errorf("%s: size %d, want %d", c.name, got, c.want)
		}
	}
}

// TestTheLargestOrdinaryRecordFits: the API keeps an input inline only
// up to api.InlineInputBytes as stored (escapes included), and puts a
// larger one in the payload store (docs/payloads.md). A record with the
// largest inline input, the largest metadata, the
// longest key and the longest tenant the API takes is under 400 KB with
// its attempts' room, so no client input can reach the store's limit.
func TestTheLargestOrdinaryRecordFits(t *testing.T) {
	s := settings.Defaults()
	l := s.Limits
	meta := `{"m":"` + strings.Repeat("m", l.MaxMetadataBytes-8) + `"}`
	body := func(per int) string {
		return `{"input":{"messages":[{"role":"user","content":"` + strings.Repeat("\u2028", per) + `"}],"max_tokens":32768},"metadata":` + meta +
			`,"deadline_seconds":86400,"budget_cents":10000,"max_attempts":8}`
	}
	var j job.Job
	for per := 1; ; per++ {
		req, err := api.ParseCreate("jwt:"+strings.Repeat("t", 1020), strings.Repeat("k", wire.MaxKeyLength), []byte(body(per)), l)
		if err != nil {
			t.Fatalf("ParseCreate: %v", err)
		}
		next := req.NewJob(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), time.Hour)
		if len(next.Input) > api.InlineInputBytes {
			break
		}
		j = next
	}
	if len(j.Input) < api.InlineInputBytes-6 {
		t.Fatalf("the input is %d bytes, want just under %d", len(j.Input), api.InlineInputBytes)
	}
	j.Reserve = 1 << 40
	if n := itemSize(toItem(j, indexes{activeShards: 16, createdShards: 16})); n > maxItemBytes-growth {
		t.Fatalf("the largest ordinary record is %d bytes, over %d (the limit less its attempts' room)", n, maxItemBytes-growth)
	}
	c := &putCounter{}
	if _, err := New(c, "jobs", s).Create(t.Context(), j); err != nil || c.puts.Load() != 1 {
		t.Fatalf("Create: %v, %d puts", err, c.puts.Load())
	}
}

// TestANewRecordKeepsRoomForItsAttempts: a record that would fit the item
// limit only just is refused too: every attempt adds a settled token, an
// end adds its index keys and detail, and a record that cannot take them
// could not record what its attempts cost.
func TestANewRecordKeepsRoomForItsAttempts(t *testing.T) {
	c := &putCounter{}
	st := New(c, "jobs", settings.Defaults())
	record := func(n int) (job.Job, int) {
		j := newJob(t, "jwt:a", `{"input":{"messages":[{"role":"user","content":"`+strings.Repeat("\u2028", n)+`"}]}}`)
		return j, itemSize(toItem(j, indexes{activeShards: 16, createdShards: 16}))
	}
	// The smallest input whose record is over the limit less its room (a
	// record grows with its input): searched, not stepped, as each try
	// builds and hashes a record of about 400 KB.
	// The characters are 3 bytes each: 85,000 is a body under the API's
	// 256 KiB, whose record is over the limit.
	lo, hi := 0, 85_000
	for lo < hi {
		if mid := (lo + hi) / 2; func() bool { _, size := record(mid); return size > maxItemBytes-growth }() {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	j, size := record(lo)
	if size > maxItemBytes {
		t.Fatalf("one more character stepped over the band between the limit less its room and the limit (%d bytes)", size)
	}
	if _, err := st.Create(t.Context(), j); job.ErrorCode(err) != job.CodeTooLarge || c.puts.Load() != 0 {
		t.Fatalf("a %d-byte record (limit %d, room %d): %v, %d puts; want too_large before any write", size, maxItemBytes, growth, err, c.puts.Load())
	}
}
