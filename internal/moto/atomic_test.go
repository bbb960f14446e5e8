//go:build moto

package moto

import (
	"fmt"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// TestTheFrontKeepsOneItemsWritesApart: the race that gets several
// winners from moto itself (TestConditionalUpdateItemIsNotAtomic) gets
// exactly one through the Front, every round, for UpdateItem and for a
// PutItem conditioned on the item's absence (whose key the Front learns
// from the table); racers on different items all win.
func TestTheFrontKeepsOneItemsWritesApart(t *testing.T) {
	ctx := t.Context()
	db := dynamodb.NewFromConfig(configFor(front))
	table := "racing-front"
	if _, err := db.CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName:            aws.String(table),
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("pk"), AttributeType: types.ScalarAttributeTypeS}},
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash}},
		BillingMode:          types.BillingModePayPerRequest,
	}); err != nil {
		t.Fatal(err)
	}
	const rounds, racers = 20, 16
	for round := range rounds {
		pk := fmt.Sprint("item", round)
		if won := race(ctx, t, db, table, pk, racers); won != 1 {
			t.Fatalf("round %d: %d of %d conditional UpdateItems succeeded on one item through the front, want 1 (claims %s)",
				round, won, racers, claims(ctx, t, db, table, pk))
		}
		if won := racePuts(t, db, table, "put"+pk, racers, false); won != 1 {
			t.Fatalf("round %d: %d of %d conditional PutItems of one item succeeded through the front, want 1", round, won, racers)
		}
	}
	if won := racePuts(t, db, table, "apart", racers, true); won != racers {
		t.Fatalf("%d of %d conditional PutItems of different items succeeded, want all", won, racers)
	}
}

// racePuts has n writers put an item only if it is absent at once, all
// the same item or each its own, and answers how many succeeded.
func racePuts(t *testing.T, db *dynamodb.Client, table, pk string, n int, apart bool) int {
	return racers(t, n, func(i int) error {
		key := pk
		if apart {
			key = fmt.Sprint(pk, i)
		}
		_, err := db.PutItem(t.Context(), &dynamodb.PutItemInput{TableName: aws.String(table),
			Item:                map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: key}, "by": &types.AttributeValueMemberN{Value: fmt.Sprint(i)}},
			ConditionExpression: aws.String("attribute_not_exists(pk)")})
		return err
	})
}
