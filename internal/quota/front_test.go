package quota_test

import (
	"errors"
	"fmt"
	"math"
	"os"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"

	"github.com/aijobs/aijobs/internal/awstest"
	"github.com/aijobs/aijobs/internal/quota"
	"github.com/aijobs/aijobs/pkg/awsclient"
)

func TestMain(m *testing.M) { os.Exit(awstest.Main(m)) }

// index is the test table's global secondary index: keyed by g, projecting
// its keys only, so an entry is pk and g.
const index = "by_g"

// rig is a test table on the emulator, a front before it, and clients
// through the front and straight to the emulator.
type rig struct {
	front       *quota.Front
	table       string
	via, bare   *dynamodb.Client
	viaRetrying *dynamodb.Client
}

// newRig makes a table (key pk, index by_g on g) and a front held to
// limits. The client through the front tries a call again only when no
// answer arrived (transportOnly), so a test sees each refusal;
// viaRetrying retries as the SDK does by default, with more attempts.
func newRig(t *testing.T, limits quota.Limits) *rig {
	t.Helper()
	cfg := awstest.Config(t, nil)
	bare := awsclient.DynamoDB(cfg)
	f, err := quota.Start(awstest.Endpoint(t), limits)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.Stop)
	through := cfg.Copy()
	through.BaseEndpoint = aws.String(f.Endpoint)
	once := transportOnly(through)
	many := through.Copy()
	many.RetryMaxAttempts = 10
	r := &rig{front: f, table: awstest.Prefix(t), via: awsclient.DynamoDB(once), bare: bare, viaRetrying: awsclient.DynamoDB(many)}
	_, err = bare.CreateTable(t.Context(), &dynamodb.CreateTableInput{
		TableName: aws.String(r.table),
		AttributeDefinitions: []types.AttributeDefinition{
			{AttributeName: aws.String("pk"), AttributeType: types.ScalarAttributeTypeS},
			{AttributeName: aws.String("g"), AttributeType: types.ScalarAttributeTypeS},
		},
		KeySchema:   []types.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash}},
		BillingMode: types.BillingModePayPerRequest,
		GlobalSecondaryIndexes: []types.GlobalSecondaryIndex{{
			IndexName:  aws.String(index),
			KeySchema:  []types.KeySchemaElement{{AttributeName: aws.String("g"), KeyType: types.KeyTypeHash}},
			Projection: &types.Projection{ProjectionType: types.ProjectionTypeKeysOnly},
		}},
	})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// transportOnly is cfg with a retryer that tries a call again only when
// no answer arrived: a loaded machine now and then cuts a response off in
// the SDK's transport ("deserialization failed ... use of closed network
// connection", seen here and in pkg/dynamodb's replay tests), which is no
// refusal of the front's and must not fail a test that counts refusals.
func transportOnly(cfg aws.Config) aws.Config {
	out := cfg.Copy()
	out.RetryMaxAttempts = 0
	noAnswer := retry.IsErrorRetryableFunc(func(err error) aws.Ternary {
		var ae smithy.APIError
		return aws.BoolTernary(!errors.As(err, &ae))
	})
	out.Retryer = func() aws.Retryer {
		return retry.NewStandard(func(o *retry.StandardOptions) {
			o.MaxAttempts = 5
			o.Retryables = []retry.IsErrorRetryable{noAnswer}
		})
	}
	return out
}

// sized is an item {pk, pad} of exactly size bytes as DynamoDB counts
// them: "pk" and its value, "pad" and its value.
func sized(pk string, size int) map[string]types.AttributeValue {
	n := size - len("pk") - len(pk) - len("pad")
	return map[string]types.AttributeValue{"pk": s(pk), "pad": s(strings.Repeat("x", n))}
}

func s(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }

func key(pk string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{"pk": s(pk)}
}

func (r *rig) put(t *testing.T, db *dynamodb.Client, it map[string]types.AttributeValue) error {
	t.Helper()
	_, err := db.PutItem(t.Context(), &dynamodb.PutItemInput{TableName: aws.String(r.table), Item: it})
	return err
}

// stored is the item at pk, read from the emulator itself.
func (r *rig) stored(t *testing.T, pk string) map[string]types.AttributeValue {
	t.Helper()
	out, err := r.bare.GetItem(t.Context(), &dynamodb.GetItemInput{TableName: aws.String(r.table), Key: key(pk), ConsistentRead: aws.Bool(true)})
	if err != nil {
		t.Fatal(err)
	}
	return out.Item
}

// code is an API error's code, or "" for none.
func code(err error) string {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		return ae.ErrorCode()
	}
	return ""
}

// wantTooLarge fails unless err is DynamoDB's refusal of an item over the
// limit.
func wantTooLarge(t *testing.T, what string, err error, message string) {
	t.Helper()
	var ae smithy.APIError
	if !errors.As(err, &ae) || ae.ErrorCode() != "ValidationException" || ae.ErrorMessage() != message {
		t.Fatalf("%s over 400 KB: got %v, want ValidationException %q", what, err, message)
	}
}

// TestAnItemOverTheLimitIsRefused: the emulator takes an item one byte
// over DynamoDB's 409,600 (the gap, shown here so its closing is seen);
// through the front a PutItem, a BatchWriteItem and a TransactWriteItems
// putting it are refused as DynamoDB refuses them and write nothing, an
// item of exactly the limit is taken, and an UpdateItem that would grow an
// item past the limit is refused with the item left as it was.
func TestAnItemOverTheLimitIsRefused(t *testing.T) {
	r := newRig(t, quota.Limits{})
	ctx := t.Context()
	if err := r.put(t, r.bare, sized("gap", 409601)); err != nil {
		t.Fatalf("the emulator refused an item over 400 KB (%v): the gap docs/testing.md names has closed", err)
	}
	const putMsg = "Item size has exceeded the maximum allowed size"
	wantTooLarge(t, "PutItem", r.put(t, r.via, sized("big", 409601)), putMsg)
	_, err := r.via.BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{RequestItems: map[string][]types.WriteRequest{r.table: {
		{PutRequest: &types.PutRequest{Item: sized("small", 100)}}, {PutRequest: &types.PutRequest{Item: sized("big", 409601)}},
	}}})
	wantTooLarge(t, "BatchWriteItem", err, putMsg)
	_, err = r.via.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
		{Put: &types.Put{TableName: aws.String(r.table), Item: sized("big", 409601)}},
	}})
	wantTooLarge(t, "TransactWriteItems", err, putMsg)
	for _, pk := range []string{"big", "small"} {
		if it := r.stored(t, pk); it != nil {
			t.Fatalf("a refused write left %q in the table", pk)
		}
	}
	if err := r.put(t, r.via, sized("edge", 409600)); err != nil {
		t.Fatalf("an item of exactly 400 KB was refused: %v", err)
	}
	if err := r.put(t, r.via, sized("grow", 300000)); err != nil {
		t.Fatal(err)
	}
	_, err = r.via.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String(r.table), Key: key("grow"),
		UpdateExpression:          aws.String("SET more = :m"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":m": s(strings.Repeat("y", 200000))}})
	wantTooLarge(t, "UpdateItem", err, "Item size to update has exceeded the maximum allowed size")
	it := r.stored(t, "grow")
	if _, ok := it["more"]; ok || it == nil {
		t.Fatalf("a refused update was left applied: the item has %d attributes", len(it))
	}
}

// units is a scope's read and write units.
func (r *rig) units(idx, pk string) (read, write float64) {
	u := r.front.Meter.Usage(quota.Scope{Table: r.table, Index: idx, Key: pk})
	return u.Read, u.Write
}

// TestUnitsAreMeteredFromItemSizes holds the meter to units worked out by
// hand from the items' sizes (CapacityUnitCalculations): whole KB a write
// at the larger of the item before and after, a failed condition at the
// item as it stays, double in a transaction; whole 4 KB a read, halved
// when eventually consistent, a Query summed over its items; an index
// entry written when it appears, moves or goes.
func TestUnitsAreMeteredFromItemSizes(t *testing.T) {
	r := newRig(t, quota.Limits{})
	ctx := t.Context()
	steps := []struct {
		what            string
		do              func() error
		pk              string
		wantR, wantW    float64 // the key's totals after the step
		wantTableWrites float64
	}{
		{"put a new 1,500-byte item: 2 KB", func() error { return r.put(t, r.via, sized("a", 1500)) }, "a", 0, 2, 2},
		{"put 500 bytes over it: the larger, 1,500", func() error { return r.put(t, r.via, sized("a", 500)) }, "a", 0, 4, 4},
		{"update it to 2,100 bytes: 3 KB", func() error {
			_, err := r.via.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String(r.table), Key: key("a"),
				UpdateExpression:          aws.String("SET pad = :p"),
				ExpressionAttributeValues: map[string]types.AttributeValue{":p": s(strings.Repeat("x", 2100-len("pk")-1-len("pad")))}})
			return err
		}, "a", 0, 7, 7},
		{"a failed conditional update still pays the item's 3 KB", func() error {
			_, err := r.via.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String(r.table), Key: key("a"),
				UpdateExpression: aws.String("SET other = :o"), ConditionExpression: aws.String("attribute_not_exists(pk)"),
				ExpressionAttributeValues: map[string]types.AttributeValue{":o": s("o")}})
			if code(err) != "ConditionalCheckFailedException" {
				return errors.New("want ConditionalCheckFailedException, got " + code(err))
			}
			return nil
		}, "a", 0, 10, 10},
		{"a strongly consistent get of 2,100 bytes: 1", func() error {
			_, err := r.via.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(r.table), Key: key("a"), ConsistentRead: aws.Bool(true)})
			return err
		}, "a", 1, 10, 10},
		{"an eventually consistent one: 0.5", func() error {
			_, err := r.via.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(r.table), Key: key("a")})
			return err
		}, "a", 1.5, 10, 10},
		{"a query of it, eventually consistent: 0.5", func() error {
			_, err := r.via.Query(ctx, &dynamodb.QueryInput{TableName: aws.String(r.table),
				KeyConditionExpression: aws.String("#k = :k"), ExpressionAttributeNames: map[string]string{"#k": "pk"},
				ExpressionAttributeValues: map[string]types.AttributeValue{":k": s("a")}, ProjectionExpression: aws.String("pk")})
			return err
		}, "a", 2, 10, 10},
		{"a 5,000-byte item in a transaction: 5 KB twice", func() error {
			_, err := r.via.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
				{Put: &types.Put{TableName: aws.String(r.table), Item: sized("b", 5000)}}}})
			return err
		}, "b", 0, 10, 20},
		{"a strongly consistent get of 5,000 bytes: 2", func() error {
			_, err := r.via.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(r.table), Key: key("b"), ConsistentRead: aws.Bool(true)})
			return err
		}, "b", 2, 10, 20},
		{"a query of it projecting only its key still reads 5,000 bytes: 2 blocks, halved", func() error {
			_, err := r.via.Query(ctx, &dynamodb.QueryInput{TableName: aws.String(r.table),
				KeyConditionExpression:    aws.String("pk = :k"),
				ExpressionAttributeValues: map[string]types.AttributeValue{":k": s("b")}, ProjectionExpression: aws.String("pk")})
			return err
		}, "b", 3, 10, 20},
		{"a get of it projecting only its key reads the whole 5,000 bytes: 2", func() error {
			_, err := r.via.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(r.table), Key: key("b"),
				ConsistentRead: aws.Bool(true), ProjectionExpression: aws.String("pk")})
			return err
		}, "b", 5, 10, 20},
		{"delete it: its 5 KB", func() error {
			_, err := r.via.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(r.table), Key: key("b")})
			return err
		}, "b", 5, 15, 25},
		{"a get of nothing: 1", func() error {
			_, err := r.via.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(r.table), Key: key("b"), ConsistentRead: aws.Bool(true)})
			return err
		}, "b", 6, 15, 25},
	}
	for _, st := range steps {
		if err := st.do(); err != nil {
			t.Fatalf("%s: %v", st.what, err)
		}
		read, write := r.units("", st.pk)
		if read != st.wantR || write != st.wantW {
			t.Fatalf("%s: key %q has %v read and %v write units, want %v and %v", st.what, st.pk, read, write, st.wantR, st.wantW)
		}
		if _, w := r.units("", ""); w != st.wantTableWrites {
			t.Fatalf("%s: the table has %v write units, want %v", st.what, w, st.wantTableWrites)
		}
	}
	indexUnits(t, r)
}

// indexUnits: an item that gains an index key writes one entry (its keys,
// a few bytes: 1 unit), one whose index key changes writes two (the old
// entry deleted, the new one put), one whose unprojected attributes change
// writes none; a query of the index reads the entries, not the items.
func indexUnits(t *testing.T, r *rig) {
	ctx := t.Context()
	it := sized("c", 3000)
	it["g"] = s("one")
	if err := r.put(t, r.via, it); err != nil {
		t.Fatal(err)
	}
	it["g"] = s("two")
	if err := r.put(t, r.via, it); err != nil {
		t.Fatal(err)
	}
	it["pad"] = s("changed, but not projected")
	if err := r.put(t, r.via, it); err != nil {
		t.Fatal(err)
	}
	for g, want := range map[string]float64{"one": 2, "two": 1} {
		if _, w := r.units(index, g); w != want {
			t.Fatalf("index key %q has %v write units, want %v", g, w, want)
		}
	}
	if _, w := r.units(index, ""); w != 3 {
		t.Fatalf("the index has %v write units, want 3", w)
	}
	if _, err := r.via.Query(ctx, &dynamodb.QueryInput{TableName: aws.String(r.table), IndexName: aws.String(index),
		KeyConditionExpression:    aws.String("g = :g"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":g": s("two")}}); err != nil {
		t.Fatal(err)
	}
	if read, _ := r.units(index, "two"); read != 0.5 {
		t.Fatalf("a query of a 3,000-byte item's index entry read %v units, want 0.5 (the entry, not the item)", read)
	}
}

// TestBatchAndTransactionReadsAreMeteredPerItem: a BatchGetItem pays for
// each key as a GetItem of its own (a missing one too), a TransactGetItems
// twice a strongly consistent read, and a Scan the sum of the items it
// read, rounded once, against the table alone.
func TestBatchAndTransactionReadsAreMeteredPerItem(t *testing.T) {
	r := newRig(t, quota.Limits{})
	ctx := t.Context()
	for pk, size := range map[string]int{"a": 5000, "b": 3000} {
		if err := r.put(t, r.bare, sized(pk, size)); err != nil {
			t.Fatal(err)
		}
	}
	_, err := r.via.BatchGetItem(ctx, &dynamodb.BatchGetItemInput{RequestItems: map[string]types.KeysAndAttributes{
		r.table: {Keys: []map[string]types.AttributeValue{key("a"), key("b"), key("none")}, ConsistentRead: aws.Bool(true)}}})
	if err != nil {
		t.Fatal(err)
	}
	for pk, want := range map[string]float64{"a": 2, "b": 1, "none": 1} {
		if read, _ := r.units("", pk); read != want {
			t.Fatalf("BatchGetItem: key %q read %v units, want %v", pk, read, want)
		}
	}
	_, err = r.via.TransactGetItems(ctx, &dynamodb.TransactGetItemsInput{TransactItems: []types.TransactGetItem{
		{Get: &types.Get{TableName: aws.String(r.table), Key: key("a")}}}})
	if err != nil {
		t.Fatal(err)
	}
	if read, _ := r.units("", "a"); read != 2+4 {
		t.Fatalf("TransactGetItems of 5,000 bytes: key a read %v units in all, want 6 (2, then 2 twice)", read)
	}
	before, _ := r.units("", "")
	if _, err := r.via.Scan(ctx, &dynamodb.ScanInput{TableName: aws.String(r.table)}); err != nil {
		t.Fatal(err)
	}
	// 8,000 bytes in two 4 KB blocks, eventually consistent.
	if after, _ := r.units("", ""); after-before != 1 {
		t.Fatalf("a Scan of 8,000 bytes read %v units, want 1", after-before)
	}
}

// TestAnUpdateAnswersWhatItAskedFor: the front asks an UpdateItem for
// the item after, to meter it without reading it again; the caller still
// gets what it asked: nothing when it asked nothing, the new item, or the
// old one.
func TestAnUpdateAnswersWhatItAskedFor(t *testing.T) {
	r := newRig(t, quota.Limits{})
	if err := r.put(t, r.via, sized("u", 100)); err != nil {
		t.Fatal(err)
	}
	for i, asked := range []types.ReturnValue{"", types.ReturnValueAllNew, types.ReturnValueAllOld} {
		out, err := r.via.UpdateItem(t.Context(), &dynamodb.UpdateItemInput{TableName: aws.String(r.table), Key: key("u"),
			UpdateExpression: aws.String("SET n = :n"), ReturnValues: asked,
			ExpressionAttributeValues: map[string]types.AttributeValue{":n": &types.AttributeValueMemberN{Value: fmt.Sprint(i)}}})
		if err != nil {
			t.Fatal(err)
		}
		n, _ := out.Attributes["n"].(*types.AttributeValueMemberN)
		switch {
		case asked == "" && len(out.Attributes) != 0:
			t.Fatalf("an update that asked for nothing got %d attributes back", len(out.Attributes))
		case asked == types.ReturnValueAllNew && (n == nil || n.Value != "1" || out.Attributes["pad"] == nil):
			t.Fatalf("ALL_NEW got %v", out.Attributes)
		case asked == types.ReturnValueAllOld && (n == nil || n.Value != "1"):
			t.Fatalf("ALL_OLD got %v, want n = 1 from before", out.Attributes)
		}
	}
	// 100 bytes then 104 or so: each update one unit, the put one.
	if _, w := r.units("", "u"); w != 4 {
		t.Fatalf("a put and three small updates: %v write units, want 4", w)
	}
}

// TestRacingWritesToOneItemAreEachMeteredOnce: 16 updates racing to grow
// one item, each by its own 600-byte set member, are each billed at the
// item as that update left it: whatever their order, the k-th to land
// leaves 8 + 600k bytes more than the bare key, so the sum is known.
// Half ask for ALL_OLD, so the front reads their item after the write
// itself, which is right only while the item's other writes wait.
func TestRacingWritesToOneItemAreEachMeteredOnce(t *testing.T) {
	r := newRig(t, quota.Limits{})
	if err := r.put(t, r.via, map[string]types.AttributeValue{"pk": s("race")}); err != nil {
		t.Fatal(err)
	}
	const racers, member = 16, 600
	errs := make(chan error, racers)
	for i := range racers {
		go func() {
			v := fmt.Sprintf("%02d", i) + strings.Repeat("m", member-2)
			_, err := r.via.UpdateItem(t.Context(), &dynamodb.UpdateItemInput{TableName: aws.String(r.table), Key: key("race"),
				UpdateExpression: aws.String("ADD ss :v"), ReturnValues: []types.ReturnValue{"", types.ReturnValueAllOld}[i%2],
				ExpressionAttributeValues: map[string]types.AttributeValue{":v": &types.AttributeValueMemberSS{Value: []string{v}}}})
			errs <- err
		}()
	}
	for range racers {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	want := 1.0 // the put of the bare key, 6 bytes
	for k := 1; k <= racers; k++ {
		want += math.Ceil(float64(len("pk")+len("race")+len("ss")+member*k) / 1024)
	}
	if _, w := r.units("", "race"); w != want {
		t.Fatalf("16 racing updates growing one item: %v write units, want %v", w, want)
	}
	if ss, _ := r.stored(t, "race")["ss"].(*types.AttributeValueMemberSS); ss == nil || len(ss.Value) != racers {
		t.Fatalf("the item holds %v, want all %d members", ss, racers)
	}
}
