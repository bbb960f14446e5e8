package awsclient_test

import (
	"os"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/aijobs/aijobs/internal/awstest"
	"github.com/aijobs/aijobs/pkg/awsclient"
)

func TestMain(m *testing.M) { os.Exit(awstest.Main(m)) }

// GetItem's ConsistentRead decides its price (AWS DynamoDB Developer
// Guide, "DynamoDB read and write operations": an eventually consistent
// read of up to 4 KB takes half a read unit, a strongly consistent one a
// whole unit), and leaving it unset means eventually consistent, the
// default. The counter splits GetItem calls that way, while the
// per-operation counts stay the plain totals the reports sum.
func TestCounterSplitsGetItemByConsistency(t *testing.T) {
	c := awsclient.NewCounter()
	db := awsclient.DynamoDB(awstest.Config(t, c))
	ctx := t.Context()
	table := aws.String(awstest.Prefix(t))
	if _, err := db.CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName:            table,
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("pk"), AttributeType: types.ScalarAttributeTypeS}},
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash}},
		BillingMode:          types.BillingModePayPerRequest,
	}); err != nil {
		t.Fatal(err)
	}
	c.Reset()
	if got, eventual := c.GetItems(); got != 0 || eventual != 0 || len(c.Snapshot()) != 0 {
		t.Fatalf("after Reset: GetItems %d, %d, counts %v; want nothing", got, eventual, c.Snapshot())
	}

	key := map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "a"}}
	if _, err := db.PutItem(ctx, &dynamodb.PutItemInput{TableName: table, Item: key}); err != nil {
		t.Fatal(err)
	}
	for _, consistent := range []*bool{aws.Bool(true), aws.Bool(true), aws.Bool(false), nil} {
		if _, err := db.GetItem(ctx, &dynamodb.GetItemInput{TableName: table, Key: key, ConsistentRead: consistent}); err != nil {
			t.Fatal(err)
		}
	}

	consistent, eventual := c.GetItems()
	if consistent != 2 || eventual != 2 {
		t.Errorf("GetItems() = %d consistent, %d eventual; want 2 and 2 (false and unset are both eventual)", consistent, eventual)
	}
	want := map[string]int{"DynamoDB.PutItem": 1, "DynamoDB.GetItem": 4}
	got := c.Snapshot()
	if len(got) != len(want) {
		t.Errorf("Snapshot() = %v, want %v (no pseudo-operation for the split)", got, want)
	}
	for op, n := range want {
		if got[op] != n {
			t.Errorf("Snapshot()[%q] = %d, want %d", op, got[op], n)
		}
	}

	c.Reset()
	if consistent, eventual := c.GetItems(); consistent != 0 || eventual != 0 {
		t.Errorf("after Reset: GetItems() = %d, %d; want 0, 0", consistent, eventual)
	}
}
