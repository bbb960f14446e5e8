package main

import (
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/jsii-runtime-go"

	"github.com/aijobs/aijobs/pkg/dynamodb"
	"github.com/aijobs/aijobs/pkg/settings"
)

func TestTableLayout(t *testing.T) {
	s := defaults(t)
	st := settings.Defaults()
	must(t, "table properties", func() {
		s.tmpl.HasResourceProperties(jsii.String("AWS::DynamoDB::Table"), map[string]any{
			"TableName":                        st.TableName(),
			"BillingMode":                      "PAY_PER_REQUEST",
			"KeySchema":                        []any{map[string]any{"AttributeName": "id", "KeyType": "HASH"}},
			"PointInTimeRecoverySpecification": map[string]any{"PointInTimeRecoveryEnabled": true},
			"TimeToLiveSpecification":          map[string]any{"AttributeName": "expires_at", "Enabled": true},
			"DeletionProtectionEnabled":        true,
			"AttributeDefinitions": assertions.Match_ArrayWith(&[]any{
				map[string]any{"AttributeName": "fail_pk", "AttributeType": "S"},
				map[string]any{"AttributeName": "fail_sk", "AttributeType": "S"},
			}),
			"GlobalSecondaryIndexes": []any{map[string]any{
				"IndexName": st.FailureIndex,
				"KeySchema": []any{
					map[string]any{"AttributeName": "fail_pk", "KeyType": "HASH"},
					map[string]any{"AttributeName": "fail_sk", "KeyType": "RANGE"},
				},
				"Projection": map[string]any{"ProjectionType": "INCLUDE", "NonKeyAttributes": failureProjection},
			}},
		})
	})
	must(t, "table is retained", func() {
		s.tmpl.HasResource(jsii.String("AWS::DynamoDB::Table"), map[string]any{
			"DeletionPolicy": "Retain", "UpdateReplacePolicy": "Retain",
		})
	})
	if st.FailureIndex != "failures" {
		t.Errorf("failure index %q, the item layout documents \"failures\"", st.FailureIndex)
	}
}

// The index must carry what the store's failure query reads; the store
// owns that list.
func TestFailureProjectionMatchesStore(t *testing.T) {
	if !equalSets(failureProjection, dynamodb.FailureProjection) {
		t.Fatalf("infra projects %v, pkg/dynamodb reads %v", failureProjection, dynamodb.FailureProjection)
	}
}

func TestThrowawayRelaxesProtection(t *testing.T) {
	s := build(t, map[string]any{"throwaway": "true"}, false)
	must(t, "throwaway table", func() {
		s.tmpl.HasResource(jsii.String("AWS::DynamoDB::Table"), map[string]any{
			"DeletionPolicy": "Delete",
			"Properties":     assertions.Match_ObjectLike(&map[string]any{"DeletionProtectionEnabled": false}),
		})
	})
	for id, r := range s.resources("AWS::Logs::LogGroup") {
		if r["DeletionPolicy"] != "Delete" {
			t.Errorf("throwaway log group %s: DeletionPolicy %v", id, r["DeletionPolicy"])
		}
	}
	for id, r := range s.resources("AWS::KMS::Key") {
		if r["DeletionPolicy"] != "Delete" {
			t.Errorf("throwaway key %s: DeletionPolicy %v", id, r["DeletionPolicy"])
		}
	}
}
