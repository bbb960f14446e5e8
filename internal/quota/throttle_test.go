package quota_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/aijobs/aijobs/internal/quota"
)

// writeLimit is the scaled-down write units a second per key in these
// tests (DynamoDB's 1,000 over 100): low, so that a busy machine still
// writes past it.
const writeLimit = 10

// hammer puts 1 KB items on one key through db as fast as they go for d,
// and answers how many went through and the first refusal.
func hammer(t *testing.T, r *rig, db *dynamodb.Client, item func(i int) map[string]types.AttributeValue, d time.Duration) (int, error) {
	t.Helper()
	ok, first := 0, error(nil)
	for i, end := 0, time.Now().Add(d); time.Now().Before(end); i++ {
		err := r.put(t, db, item(i))
		switch {
		case err == nil:
			ok++
		case first == nil:
			first = err
		}
	}
	return ok, first
}

// TestAHotKeyIsThrottledAndAColdOneIsNot: one key written as fast as the
// front takes it is held near its rate and refused with DynamoDB's
// on-demand throttle, which the SDK classes as throttling and retries
// until it goes through; a key written at a quarter of the rate meanwhile
// is never refused; and the meter names the hot key as the hottest.
func TestAHotKeyIsThrottledAndAColdOneIsNot(t *testing.T) {
	r := newRig(t, quota.Limits{WriteUnits: writeLimit})
	cold := make(chan error, 1)
	go func() {
		var first error
		for i := range 5 {
			if err := r.put(t, r.via, sized("cold", 1000)); err != nil && first == nil {
				first = fmt.Errorf("cold write %d: %w", i, err)
			}
			time.Sleep(400 * time.Millisecond) // 2.5 units a second
		}
		cold <- first
	}()
	start := time.Now()
	ok, refused := hammer(t, r, r.via, func(int) map[string]types.AttributeValue { return sized("hot", 1000) }, 2*time.Second)
	elapsed := time.Since(start).Seconds()
	if err := <-cold; err != nil {
		t.Fatalf("a key at a quarter of the limit was refused: %v", err)
	}
	var te *types.ThrottlingException
	if !errors.As(refused, &te) {
		t.Fatalf("a key written past %d units a second: got %v, want a ThrottlingException", writeLimit, refused)
	}
	if len(te.ThrottlingReasons) != 1 || aws.ToString(te.ThrottlingReasons[0].Reason) != "TableWriteKeyRangeThroughputExceeded" {
		t.Fatalf("throttling reasons %+v, want TableWriteKeyRangeThroughputExceeded", te.ThrottlingReasons)
	}
	if retry.IsErrorThrottles(retry.DefaultThrottles).IsErrorThrottle(refused) != aws.TrueTernary {
		t.Fatalf("the SDK does not class %v as throttling", refused)
	}
	// One second's burst and the rate over the run, and one write past it.
	if most := writeLimit*(1+elapsed) + 1; float64(ok) > most {
		t.Fatalf("%d 1 KB writes went through in %.1fs, more than the %.0f the limit allows", ok, elapsed, most)
	}
	hot := r.front.Meter.Usage(quota.Scope{Table: r.table, Key: "hot"})
	if hot.Throttled == 0 || hot.Write != float64(ok) {
		t.Fatalf("the meter has the hot key at %v units and %d refusals, want %d units and some", hot.Write, hot.Throttled, ok)
	}
	if h := r.front.Meter.Hottest(); h.Key != "hot" || h.PeakWrite > 2*writeLimit+1 {
		t.Fatalf("hottest %+v, want the hot key at no more than a burst and a second's rate", h)
	}
	// The SDK's own retries carry a write past the throttle.
	out, err := r.viaRetrying.PutItem(t.Context(), &dynamodb.PutItemInput{TableName: aws.String(r.table), Item: drained(t, r)})
	if err != nil {
		t.Fatalf("a retried write on a throttled key: %v", err)
	}
	if n := len(retryAttempts(out)); n < 2 {
		t.Fatalf("the write went through in %d attempt(s): the SDK did not meet the throttle", n)
	}
}

// drained empties the hot key's bucket and answers the item to put next
// on it: it is refused at once, and goes through once its bucket refills.
func drained(t *testing.T, r *rig) map[string]types.AttributeValue {
	t.Helper()
	for range 10 * writeLimit {
		if r.put(t, r.via, sized("hot", 1000)) != nil {
			return sized("hot", 1000)
		}
	}
	t.Fatal("the hot key was never refused")
	return nil
}

func retryAttempts(out *dynamodb.PutItemOutput) []retry.AttemptResult {
	res, _ := retry.GetAttemptResults(out.ResultMetadata)
	return res.Results
}

// TestAHotIndexKeyThrottlesTheTable: writes to many items, each its own
// table key, that share one index key are throttled for the index's key
// (index back-pressure), named as the index's, and a provisioned front
// answers ProvisionedThroughputExceededException.
func TestAHotIndexKeyThrottlesTheTable(t *testing.T) {
	r := newRig(t, quota.Limits{WriteUnits: writeLimit, Provisioned: true})
	_, refused := hammer(t, r, r.via, func(i int) map[string]types.AttributeValue {
		it := sized(fmt.Sprint("item", i), 200)
		it["g"] = s("shared")
		return it
	}, time.Second)
	var pe *types.ProvisionedThroughputExceededException
	if !errors.As(refused, &pe) {
		t.Fatalf("writes sharing one index key past its rate: got %v, want ProvisionedThroughputExceededException", refused)
	}
	if len(pe.ThrottlingReasons) != 1 || aws.ToString(pe.ThrottlingReasons[0].Reason) != "IndexWriteKeyRangeThroughputExceeded" {
		t.Fatalf("throttling reasons %+v, want IndexWriteKeyRangeThroughputExceeded", pe.ThrottlingReasons)
	}
	if u := r.front.Meter.Usage(quota.Scope{Table: r.table, Index: index, Key: "shared"}); u.Throttled == 0 {
		t.Fatalf("the index key's meter shows no refusal: %+v", u)
	}
}

// TestAHotKeyIsThrottledForReads: reads of one key past the read rate are
// refused as reads of the table's key, a query of an index key past it as
// the index's, and the refusals are counted against each key.
func TestAHotKeyIsThrottledForReads(t *testing.T) {
	r := newRig(t, quota.Limits{ReadUnits: 5})
	it := sized("read", 4000)
	it["g"] = s("hotg")
	if err := r.put(t, r.via, it); err != nil {
		t.Fatal(err)
	}
	reads := map[string]func() error{
		"TableReadKeyRangeThroughputExceeded": func() error {
			_, err := r.via.GetItem(t.Context(), &dynamodb.GetItemInput{TableName: aws.String(r.table), Key: key("read"), ConsistentRead: aws.Bool(true)})
			return err
		},
		"IndexReadKeyRangeThroughputExceeded": func() error {
			_, err := r.via.Query(t.Context(), &dynamodb.QueryInput{TableName: aws.String(r.table), IndexName: aws.String(index),
				KeyConditionExpression: aws.String("g = :g"), ExpressionAttributeValues: map[string]types.AttributeValue{":g": s("hotg")}})
			return err
		},
	}
	for want, read := range reads {
		var refused error
		for range 200 {
			if refused = read(); refused != nil {
				break
			}
		}
		var te *types.ThrottlingException
		if !errors.As(refused, &te) || len(te.ThrottlingReasons) != 1 || aws.ToString(te.ThrottlingReasons[0].Reason) != want {
			t.Fatalf("reads past 5 units a second: got %v, want a ThrottlingException for %s", refused, want)
		}
	}
	for _, sc := range []quota.Scope{{Table: r.table, Key: "read"}, {Table: r.table, Index: index, Key: "hotg"}} {
		if u := r.front.Meter.Usage(sc); u.Throttled == 0 {
			t.Fatalf("%+v shows no refusal", u)
		}
	}
}
