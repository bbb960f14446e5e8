package awstest_test

import (
	"os"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/aijobs/aijobs/internal/awstest"
	"github.com/aijobs/aijobs/internal/quota"
	"github.com/aijobs/aijobs/pkg/awsclient"
)

// The binary's emulator is asked for behind the quota front, at a
// thousand times AWS's rates (nothing here comes near them), unless the
// run already names a scale or an endpoint of its own.
func TestMain(m *testing.M) {
	if os.Getenv("AIJOBS_QUOTA") == "" && os.Getenv("AWS_ENDPOINT_URL") == "" {
		_ = os.Setenv("AIJOBS_QUOTA", "1000")
	}
	os.Exit(awstest.Main(m))
}

// With AIJOBS_QUOTA set, the tests' endpoint is the quota front's, and
// its meter counts what a test writes.
func TestAIJOBSQuotaPutsTheFrontBeforeTheEmulator(t *testing.T) {
	m := awstest.Meter(t)
	if os.Getenv("AWS_ENDPOINT_URL") != "" {
		if m != nil {
			t.Fatal("a meter on an endpoint the run named itself")
		}
		return
	}
	if m == nil {
		t.Fatal("AIJOBS_QUOTA is set and the tests have no meter")
	}
	db := awsclient.DynamoDB(awstest.Config(t, nil))
	table := awstest.Prefix(t)
	if _, err := db.CreateTable(t.Context(), &dynamodb.CreateTableInput{TableName: aws.String(table), BillingMode: types.BillingModePayPerRequest,
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("pk"), AttributeType: types.ScalarAttributeTypeS}},
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := db.PutItem(t.Context(), &dynamodb.PutItemInput{TableName: aws.String(table),
		Item: map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "a"}}}); err != nil {
		t.Fatal(err)
	}
	if u := m.Usage(quota.Scope{Table: table, Key: "a"}); u.Write != 1 {
		t.Fatalf("the meter has %v write units on the item put, want 1", u.Write)
	}
}

// AIJOBS_QUOTA must be a positive number; unset is no front.
func TestQuotaReadsAPositiveScale(t *testing.T) {
	for v, want := range map[string]float64{"0.01": 0.01, "1": 1, "": 0} {
		t.Setenv("AIJOBS_QUOTA", v)
		f, on, err := awstest.Quota()
		if err != nil || f != want || on != (v != "") {
			t.Errorf("AIJOBS_QUOTA=%q: %v %v %v, want %v", v, f, on, err, want)
		}
	}
	for _, v := range []string{"0", "-1", "x"} {
		t.Setenv("AIJOBS_QUOTA", v)
		if _, _, err := awstest.Quota(); err == nil {
			t.Errorf("AIJOBS_QUOTA=%q was taken", v)
		}
	}
}
