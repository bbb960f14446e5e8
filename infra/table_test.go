package main

import (
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	ddb "github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/jsii-runtime-go"

	"github.com/aijobs/aijobs/pkg/dynamodb"
	"github.com/aijobs/aijobs/pkg/settings"
)

func TestTableLayout(t *testing.T) {
	s := defaults(t)
	st := settings.Defaults()
	key := func(name, typ string) map[string]any { return map[string]any{"AttributeName": name, "KeyType": typ} }
	must(t, "table properties", func() {
		s.tmpl.HasResourceProperties(jsii.String("AWS::DynamoDB::Table"), map[string]any{
			"TableName":                        st.TableName(),
			"BillingMode":                      "PAY_PER_REQUEST",
			"KeySchema":                        []any{key("id", "HASH")},
			"PointInTimeRecoverySpecification": map[string]any{"PointInTimeRecoveryEnabled": true},
			"TimeToLiveSpecification":          map[string]any{"AttributeName": "expires_at", "Enabled": true},
			"DeletionProtectionEnabled":        true,
			"AttributeDefinitions": assertions.Match_ArrayWith(&[]any{
				map[string]any{"AttributeName": "fail_pk", "AttributeType": "S"},
				map[string]any{"AttributeName": "fail_sk", "AttributeType": "S"},
				map[string]any{"AttributeName": "tnt_pk", "AttributeType": "S"},
				map[string]any{"AttributeName": "tnt_sk", "AttributeType": "S"},
				map[string]any{"AttributeName": "act_pk", "AttributeType": "S"},
				map[string]any{"AttributeName": "created_ms", "AttributeType": "N"},
				map[string]any{"AttributeName": "crt_pk", "AttributeType": "S"},
				map[string]any{"AttributeName": "enl_pk", "AttributeType": "S"},
				map[string]any{"AttributeName": "enl_ms", "AttributeType": "N"},
			}),
			"GlobalSecondaryIndexes": []any{
				map[string]any{
					"IndexName":  st.FailureIndex,
					"KeySchema":  []any{key("fail_pk", "HASH"), key("fail_sk", "RANGE")},
					"Projection": map[string]any{"ProjectionType": "INCLUDE", "NonKeyAttributes": failureProjection},
				},
				map[string]any{
					"IndexName":  st.TenantIndex,
					"KeySchema":  []any{key("tnt_pk", "HASH"), key("tnt_sk", "RANGE")},
					"Projection": map[string]any{"ProjectionType": "INCLUDE", "NonKeyAttributes": tenantProjection},
				},
				map[string]any{
					"IndexName":  st.ActiveIndex,
					"KeySchema":  []any{key("act_pk", "HASH"), key("created_ms", "RANGE")},
					"Projection": map[string]any{"ProjectionType": "KEYS_ONLY"},
				},
				map[string]any{
					"IndexName":  st.CreatedIndex,
					"KeySchema":  []any{key("crt_pk", "HASH"), key("created_ms", "RANGE")},
					"Projection": map[string]any{"ProjectionType": "INCLUDE", "NonKeyAttributes": createdProjection},
				},
				map[string]any{
					"IndexName":  st.EnlistedIndex,
					"KeySchema":  []any{key("enl_pk", "HASH"), key("enl_ms", "RANGE")},
					"Projection": map[string]any{"ProjectionType": "KEYS_ONLY"},
				},
			},
		})
	})
	must(t, "table is retained", func() {
		s.tmpl.HasResource(jsii.String("AWS::DynamoDB::Table"), map[string]any{
			"DeletionPolicy": "Retain", "UpdateReplacePolicy": "Retain",
		})
	})
	if st.FailureIndex != "failures" || st.TenantIndex != "by_tenant_shard" || st.ActiveIndex != "active" || st.CreatedIndex != "by_created" ||
		st.EnlistedIndex != "enlisted" {
		t.Errorf("indexes %q %q %q %q %q, the item layout documents failures, by_tenant_shard, active, by_created, enlisted",
			st.FailureIndex, st.TenantIndex, st.ActiveIndex, st.CreatedIndex, st.EnlistedIndex)
	}
}

// The indexes must carry what the store's queries read; the store owns
// those lists.
func TestProjectionsMatchStore(t *testing.T) {
	if !equalSets(failureProjection, dynamodb.FailureProjection) {
		t.Errorf("infra's failure index projects %v, pkg/dynamodb reads %v", failureProjection, dynamodb.FailureProjection)
	}
	if !equalSets(tenantProjection, dynamodb.TenantProjection) {
		t.Errorf("infra's tenant index projects %v, pkg/dynamodb reads %v", tenantProjection, dynamodb.TenantProjection)
	}
	if !equalSets(createdProjection, dynamodb.CreatedProjection) {
		t.Errorf("infra's created index projects %v, pkg/dynamodb reads %v", createdProjection, dynamodb.CreatedProjection)
	}
}

// tableRecorder is a DynamoDB that records the CreateTable call it gets
// and reports the table active with TTL on.
type tableRecorder struct{ in *ddb.CreateTableInput }

func (r *tableRecorder) CreateTable(_ context.Context, in *ddb.CreateTableInput, _ ...func(*ddb.Options)) (*ddb.CreateTableOutput, error) {
	r.in = in
	return &ddb.CreateTableOutput{}, nil
}

func (r *tableRecorder) DescribeTable(context.Context, *ddb.DescribeTableInput, ...func(*ddb.Options)) (*ddb.DescribeTableOutput, error) {
	return &ddb.DescribeTableOutput{Table: &types.TableDescription{TableStatus: types.TableStatusActive}}, nil
}

func (r *tableRecorder) UpdateTimeToLive(context.Context, *ddb.UpdateTimeToLiveInput, ...func(*ddb.Options)) (*ddb.UpdateTimeToLiveOutput, error) {
	return &ddb.UpdateTimeToLiveOutput{}, nil
}

func (r *tableRecorder) DescribeTimeToLive(context.Context, *ddb.DescribeTimeToLiveInput, ...func(*ddb.Options)) (*ddb.DescribeTimeToLiveOutput, error) {
	name := attrExpires
	return &ddb.DescribeTimeToLiveOutput{TimeToLiveDescription: &types.TimeToLiveDescription{
		AttributeName: &name, TimeToLiveStatus: types.TimeToLiveStatusEnabled}}, nil
}

// The stack's table is the table pkg/dynamodb creates for the local
// stacks: the same key, attribute types, indexes (names, keys,
// projections) and stream (the notifier reads old and new images),
// compared with what its CreateTable actually sends, so a
// change to the item layout's names fails here.
func TestIndexesMatchStore(t *testing.T) {
	s := defaults(t)
	rec := &tableRecorder{}
	if err := dynamodb.CreateTable(t.Context(), rec, "t", s.cfg.Settings); err != nil || rec.in == nil {
		t.Fatalf("CreateTable: %v", err)
	}
	type keyElem struct{ AttributeName, KeyType string }
	type projection struct {
		ProjectionType   string
		NonKeyAttributes []string `json:",omitempty"`
	}
	type index struct {
		IndexName  string
		KeySchema  []keyElem
		Projection projection
	}
	type stream struct{ StreamViewType string }
	type table struct {
		KeySchema              []keyElem
		AttributeDefinitions   map[string]string
		GlobalSecondaryIndexes []index
		// CloudFormation has no StreamEnabled: a view type is a stream.
		StreamSpecification *stream
	}
	keys := func(in []types.KeySchemaElement) []keyElem {
		var out []keyElem
		for _, k := range in {
			out = append(out, keyElem{*k.AttributeName, string(k.KeyType)})
		}
		return out
	}
	want := table{KeySchema: keys(rec.in.KeySchema), AttributeDefinitions: map[string]string{}}
	if sp := rec.in.StreamSpecification; sp != nil && sp.StreamEnabled != nil && *sp.StreamEnabled {
		want.StreamSpecification = &stream{string(sp.StreamViewType)}
	}
	if want.StreamSpecification == nil || want.StreamSpecification.StreamViewType != "NEW_AND_OLD_IMAGES" {
		t.Errorf("pkg/dynamodb creates the stream %+v, the notifier needs NEW_AND_OLD_IMAGES", want.StreamSpecification)
	}
	for _, a := range rec.in.AttributeDefinitions {
		want.AttributeDefinitions[*a.AttributeName] = string(a.AttributeType)
	}
	for _, g := range rec.in.GlobalSecondaryIndexes {
		want.GlobalSecondaryIndexes = append(want.GlobalSecondaryIndexes, index{*g.IndexName, keys(g.KeySchema),
			projection{string(g.Projection.ProjectionType), g.Projection.NonKeyAttributes}})
	}

	_, props := s.one(t, "AWS::DynamoDB::Table", named("TableName", s.cfg.Settings.TableName()))
	b, _ := json.Marshal(props)
	var got struct {
		KeySchema              []keyElem
		AttributeDefinitions   []struct{ AttributeName, AttributeType string }
		GlobalSecondaryIndexes []index
		StreamSpecification    *stream
	}
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	have := table{KeySchema: got.KeySchema, AttributeDefinitions: map[string]string{}, GlobalSecondaryIndexes: got.GlobalSecondaryIndexes,
		StreamSpecification: got.StreamSpecification}
	for _, a := range got.AttributeDefinitions {
		have.AttributeDefinitions[a.AttributeName] = a.AttributeType
	}
	h, _ := json.MarshalIndent(have, "", " ")
	w, _ := json.MarshalIndent(want, "", " ")
	if string(h) != string(w) {
		t.Errorf("the stack's table\n%s\npkg/dynamodb creates\n%s", h, w)
	}
}

// The tenants table is kept like the jobs table (a lost item puts a
// tenant back on key version 1, which its receivers may no longer trust),
// and has the key pkg/dynamodb creates it with locally.
func TestTenantsTableMatchesStore(t *testing.T) {
	s := defaults(t)
	rec := &tableRecorder{}
	if err := dynamodb.CreateTenantsTable(t.Context(), rec, "t"); err != nil || rec.in == nil {
		t.Fatalf("CreateTenantsTable: %v", err)
	}
	var keys, attrs []any
	for _, k := range rec.in.KeySchema {
		keys = append(keys, map[string]any{"AttributeName": *k.AttributeName, "KeyType": string(k.KeyType)})
	}
	for _, a := range rec.in.AttributeDefinitions {
		attrs = append(attrs, map[string]any{"AttributeName": *a.AttributeName, "AttributeType": string(a.AttributeType)})
	}
	if len(rec.in.GlobalSecondaryIndexes) != 0 || rec.in.StreamSpecification != nil {
		t.Errorf("pkg/dynamodb creates the tenants table with indexes or a stream: the stack has neither")
	}
	must(t, "tenants table", func() {
		s.tmpl.HasResource(jsii.String("AWS::DynamoDB::Table"), map[string]any{
			"DeletionPolicy": "Retain", "UpdateReplacePolicy": "Retain",
			"Properties": map[string]any{
				"TableName":                        s.cfg.Settings.TenantsTableName(),
				"BillingMode":                      string(rec.in.BillingMode),
				"KeySchema":                        keys,
				"AttributeDefinitions":             attrs,
				"PointInTimeRecoverySpecification": map[string]any{"PointInTimeRecoveryEnabled": true},
				"DeletionProtectionEnabled":        true,
			},
		})
	})
}

// DynamoDB adds one global secondary index per table update: a table
// deployed before by_tenant_shard, active, by_created and enlisted gets
// them one deploy at a time.
func TestSkipIndexes(t *testing.T) {
	for skip, want := range map[string][]string{
		"enlisted":                   {"failures", "by_tenant_shard", "active", "by_created"},
		"by_created":                 {"failures", "by_tenant_shard", "active", "enlisted"},
		"by_created,enlisted":        {"failures", "by_tenant_shard", "active"},
		"active,by_created":          {"failures", "by_tenant_shard", "enlisted"},
		"by_tenant_shard":            {"failures", "active", "by_created", "enlisted"},
		"by_tenant_shard,by_created": {"failures", "active", "enlisted"},
		"by_tenant_shard,active,by_created,enlisted": {"failures"},
	} {
		s := build(t, map[string]any{"skipIndexes": skip}, false)
		_, props := s.one(t, "AWS::DynamoDB::Table", named("TableName", s.cfg.Settings.TableName()))
		var got []string
		for _, g := range props["GlobalSecondaryIndexes"].([]any) {
			got = append(got, g.(map[string]any)["IndexName"].(string))
		}
		if !equalSets(got, want) {
			t.Errorf("skipIndexes=%s: indexes %v, want %v", skip, got, want)
		}
	}
}

func TestThrowawayRelaxesProtection(t *testing.T) {
	s := build(t, map[string]any{"throwaway": "true"}, false)
	for id, r := range s.resources("AWS::DynamoDB::Table") {
		if p, _ := r["Properties"].(map[string]any); r["DeletionPolicy"] != "Delete" || p["DeletionProtectionEnabled"] != false {
			t.Errorf("throwaway table %s: DeletionPolicy %v, DeletionProtectionEnabled %v", id, r["DeletionPolicy"], p["DeletionProtectionEnabled"])
		}
	}
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
	// The parking bucket and its TLS-only policy go with the stack (once
	// the bucket is empty: CloudFormation cannot delete one that is not).
	for _, typ := range []string{"AWS::S3::Bucket", "AWS::S3::BucketPolicy"} {
		for id, r := range s.resources(typ) {
			if r["DeletionPolicy"] != "Delete" {
				t.Errorf("throwaway %s %s: DeletionPolicy %v", typ, id, r["DeletionPolicy"])
			}
		}
	}
}

// Names that IAM and CloudWatch dashboards hold account-wide, not per
// Region: a second deploy of the stack in another Region of the same
// account would fail on them ("already exists"). Each such name the stack
// sets must differ between Regions (or be left to CloudFormation).
func TestAccountGlobalNamesDifferByRegion(t *testing.T) {
	s := defaults(t)
	global := map[string][]string{
		"AWS::IAM::ManagedPolicy":    {"ManagedPolicyName"},
		"AWS::IAM::Role":             {"RoleName"},
		"AWS::IAM::User":             {"UserName"},
		"AWS::IAM::Group":            {"GroupName"},
		"AWS::IAM::InstanceProfile":  {"InstanceProfileName"},
		"AWS::CloudWatch::Dashboard": {"DashboardName"},
	}
	named := 0
	for typ, props := range global {
		for id, r := range s.resources(typ) {
			p := r["Properties"].(map[string]any)
			for _, prop := range props {
				v, ok := p[prop]
				if !ok {
					continue
				}
				named++
				east := resolve(t, v, map[string]string{"AWS::Region": "us-east-1"})
				west := resolve(t, v, map[string]string{"AWS::Region": "eu-west-1"})
				if east == west {
					t.Errorf("%s %s %s = %q in every Region: a second Region's deploy would collide", typ, id, prop, east)
				}
			}
		}
	}
	if named == 0 {
		t.Error("no account-global name found: the test checks nothing (the operator policy and the dashboard are named)")
	}
}

// The quarantine table has the key and TTL pkg/dynamodb creates it with
// locally.
func TestQuarantineTableMatchesStore(t *testing.T) {
	s := defaults(t)
	rec := &tableRecorder{}
	if err := dynamodb.CreateQuarantineTable(t.Context(), rec, "q"); err != nil || rec.in == nil {
		t.Fatalf("CreateQuarantineTable: %v", err)
	}
	var keys, attrs []any
	for _, k := range rec.in.KeySchema {
		keys = append(keys, map[string]any{"AttributeName": *k.AttributeName, "KeyType": string(k.KeyType)})
	}
	for _, a := range rec.in.AttributeDefinitions {
		attrs = append(attrs, map[string]any{"AttributeName": *a.AttributeName, "AttributeType": string(a.AttributeType)})
	}
	must(t, "quarantine table", func() {
		s.tmpl.HasResourceProperties(jsii.String("AWS::DynamoDB::Table"), map[string]any{
			"TableName":               s.cfg.Settings.QuarantineTableName(),
			"BillingMode":             string(rec.in.BillingMode),
			"KeySchema":               keys,
			"AttributeDefinitions":    attrs,
			"TimeToLiveSpecification": map[string]any{"AttributeName": "expires_at", "Enabled": true},
		})
	})
}

// The provider rate-limit buckets table: one item per provider key,
// keyed by provider alone (no sort key), on demand, no TTL, no index, no
// stream, and kept like the quarantine table (point-in-time recovery,
// deletion protection, RETAIN). The GCRA times (req_tat_us, tok_tat_us)
// are plain attributes, so no attribute but the key is declared.
func TestBucketsTable(t *testing.T) {
	s := defaults(t)
	name := s.cfg.Settings.BucketsTableName()
	if name != s.cfg.Settings.Prefix+"-buckets" {
		t.Errorf("buckets table %q, want %s-buckets", name, s.cfg.Settings.Prefix)
	}
	must(t, "buckets table", func() {
		s.tmpl.HasResource(jsii.String("AWS::DynamoDB::Table"), map[string]any{
			"DeletionPolicy": "Retain", "UpdateReplacePolicy": "Retain",
			"Properties": map[string]any{
				"TableName":                        name,
				"BillingMode":                      "PAY_PER_REQUEST",
				"KeySchema":                        []any{map[string]any{"AttributeName": "provider", "KeyType": "HASH"}},
				"AttributeDefinitions":             []any{map[string]any{"AttributeName": "provider", "AttributeType": "S"}},
				"PointInTimeRecoverySpecification": map[string]any{"PointInTimeRecoveryEnabled": true},
				"DeletionProtectionEnabled":        true,
			},
		})
	})
	id, props := s.one(t, "AWS::DynamoDB::Table", named("TableName", name))
	if !strings.HasPrefix(id, "Buckets") {
		t.Errorf("buckets table logical id %s, want Buckets…", id)
	}
	for _, k := range []string{"GlobalSecondaryIndexes", "LocalSecondaryIndexes", "StreamSpecification", "ProvisionedThroughput"} {
		if v, ok := props[k]; ok {
			t.Errorf("buckets table has %s %v: want none", k, v)
		}
	}
	// A tenant's spend balance parts expire with their period
	// (docs/spend.md); nothing else there carries expires_at.
	if ttl, want := props["TimeToLiveSpecification"], map[string]any{"AttributeName": "expires_at", "Enabled": true}; !reflect.DeepEqual(ttl, want) {
		t.Errorf("buckets table TTL %v, want %v", ttl, want)
	}
	// Encrypted as the quarantine table is: DynamoDB's default, no key of
	// the stack's.
	_, quarantine := s.one(t, "AWS::DynamoDB::Table", named("TableName", s.cfg.Settings.QuarantineTableName()))
	if b, q := props["SSESpecification"], quarantine["SSESpecification"]; !reflect.DeepEqual(b, q) {
		t.Errorf("buckets table encryption %v, the quarantine table's %v", b, q)
	}
	out, _ := s.json["Outputs"].(map[string]any)["BucketsTableName"].(map[string]any)
	if ref(out["Value"]) != id {
		t.Errorf("BucketsTableName output %v, want a reference to %s", out, id)
	}
}

// The buckets table has the key pkg/dynamodb creates it with locally, and
// neither TTL nor an index nor a stream there either.
func TestBucketsTableMatchesStore(t *testing.T) {
	s := defaults(t)
	rec := &tableRecorder{}
	if err := dynamodb.CreateBucketsTable(t.Context(), rec, "b"); err != nil || rec.in == nil {
		t.Fatalf("CreateBucketsTable: %v", err)
	}
	var keys, attrs []any
	for _, k := range rec.in.KeySchema {
		keys = append(keys, map[string]any{"AttributeName": *k.AttributeName, "KeyType": string(k.KeyType)})
	}
	for _, a := range rec.in.AttributeDefinitions {
		attrs = append(attrs, map[string]any{"AttributeName": *a.AttributeName, "AttributeType": string(a.AttributeType)})
	}
	if len(rec.in.GlobalSecondaryIndexes) != 0 || len(rec.in.LocalSecondaryIndexes) != 0 || rec.in.StreamSpecification != nil {
		t.Errorf("pkg/dynamodb creates the buckets table with indexes or a stream: the stack has neither")
	}
	must(t, "buckets table", func() {
		s.tmpl.HasResourceProperties(jsii.String("AWS::DynamoDB::Table"), map[string]any{
			"TableName":            s.cfg.Settings.BucketsTableName(),
			"BillingMode":          string(rec.in.BillingMode),
			"KeySchema":            keys,
			"AttributeDefinitions": attrs,
		})
	})
}
