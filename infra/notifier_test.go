package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	ddb "github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/aijobs/aijobs/pkg/dynamodb"
	"github.com/aijobs/aijobs/pkg/job"
	"github.com/aijobs/aijobs/pkg/webhook"
)

// mapping is the event source mapping from source (a logical id) to the
// function <prefix>-<fn>.
func mapping(t *testing.T, s *synthesized, fn, source string) map[string]any {
	t.Helper()
	fnID, _ := s.one(t, "AWS::Lambda::Function", named("FunctionName", s.cfg.Settings.Prefix+"-"+fn))
	_, m := s.one(t, "AWS::Lambda::EventSourceMapping", func(p map[string]any) bool {
		return ref(p["FunctionName"]) == fnID && ref(p["EventSourceArn"]) == source
	})
	return m
}

// The notifier's two event sources, as docs/webhooks.md describes them and
// with the dev server's numbers.
func TestNotifierEventSources(t *testing.T) {
	s := defaults(t)
	st := s.cfg.Settings
	tableID := jobsTable(t, s)
	callbacks, _ := s.one(t, "AWS::SQS::Queue", named("QueueName", st.CallbackQueueName()))
	callbackDLQ, _ := s.one(t, "AWS::SQS::Queue", named("QueueName", st.CallbackDLQName()))
	if n := len(s.resources("AWS::Lambda::EventSourceMapping")); n != 3 {
		t.Errorf("%d event source mappings, want the worker's and the notifier's two", n)
	}

	stream := mapping(t, s, "notifier", tableID)
	if render(stream["EventSourceArn"]) != "${"+tableID+".StreamArn}" {
		t.Errorf("stream mapping reads %v, want the table's stream", stream["EventSourceArn"])
	}
	dest, _ := stream["DestinationConfig"].(map[string]any)
	onFailure, _ := dest["OnFailure"].(map[string]any)
	// -1: retried until the record is too old (Lambda developer guide,
	// services-ddb-params.html); the age ends an hour before DynamoDB
	// Streams' 24 hours of retention.
	if stream["StartingPosition"] != "TRIM_HORIZON" || stream["BatchSize"] != float64(streamBatchSize) ||
		stream["BisectBatchOnFunctionError"] != true || stream["MaximumRetryAttempts"] != -1.0 ||
		stream["MaximumRecordAgeInSeconds"] != streamMaxRecordAge.Seconds() || streamMaxRecordAge >= 24*time.Hour ||
		ref(onFailure["Destination"]) != callbackDLQ || strings.Join(strs(stream["FunctionResponseTypes"]), ",") != "ReportBatchItemFailures" {
		t.Errorf("stream mapping %v", stream)
	}
	filters, _ := stream["FilterCriteria"].(map[string]any)["Filters"].([]any)
	if len(filters) != 1 || filters[0].(map[string]any)["Pattern"] != `{"dynamodb":{"NewImage":{"cb_url":{"S":[{"exists":true}]}}}}` {
		t.Errorf("stream filter %v, want only records whose new image has cb_url", filters)
	}

	queue := mapping(t, s, "notifier", callbacks)
	scaling, _ := queue["ScalingConfig"].(map[string]any)
	if queue["BatchSize"] != float64(st.CallbackBatchSize) || scaling["MaximumConcurrency"] != float64(callbackConcurrency) ||
		strings.Join(strs(queue["FunctionResponseTypes"]), ",") != "ReportBatchItemFailures" || queue["MaximumBatchingWindowInSeconds"] != nil {
		t.Errorf("callback queue mapping %v", queue)
	}
	// Lambda's minimum maximum concurrency for SQS (services-sqs-scaling.html).
	if callbackConcurrency < 2 {
		t.Errorf("callbackConcurrency %d below Lambda's minimum of 2", callbackConcurrency)
	}
}

// The stack's mapping numbers are the dev server's (pkg/app/devserver.go),
// read from its source: importing pkg/app would build every adapter into
// the CDK app.
func TestNotifierNumbersMatchDevServer(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "../pkg/app/devserver.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	ast.Inspect(f, func(n ast.Node) bool {
		if v, ok := n.(*ast.ValueSpec); ok && len(v.Values) == len(v.Names) {
			for i, name := range v.Names {
				if lit, ok := v.Values[i].(*ast.BasicLit); ok {
					got[name.Name] = strings.ReplaceAll(lit.Value, "_", "")
				}
			}
		}
		return true
	})
	for name, want := range map[string]int{"StreamBatchSize": streamBatchSize, "CallbackConcurrency": callbackConcurrency} {
		if got[name] != fmt.Sprint(want) {
			t.Errorf("pkg/app.%s = %q, the stack uses %d", name, got[name], want)
		}
	}
}

// itemRecorder is a DynamoDB client that keeps the item a Create puts.
type itemRecorder struct {
	dynamodb.Client
	item map[string]types.AttributeValue
}

func (r *itemRecorder) PutItem(_ context.Context, in *ddb.PutItemInput, _ ...func(*ddb.Options)) (*ddb.PutItemOutput, error) {
	r.item = in.Item
	return &ddb.PutItemOutput{}, nil
}

// streamJSON writes an item as a stream record's image: DynamoDB JSON.
func streamJSON(t *testing.T, item map[string]types.AttributeValue) map[string]any {
	t.Helper()
	out := map[string]any{}
	for k, v := range item {
		switch a := v.(type) {
		case *types.AttributeValueMemberS:
			out[k] = map[string]any{"S": a.Value}
		case *types.AttributeValueMemberN:
			out[k] = map[string]any{"N": a.Value}
		case *types.AttributeValueMemberBOOL:
			out[k] = map[string]any{"BOOL": a.Value}
		case *types.AttributeValueMemberSS:
			out[k] = map[string]any{"SS": a.Value}
		case *types.AttributeValueMemberNS:
			out[k] = map[string]any{"NS": a.Value}
		case *types.AttributeValueMemberM:
			out[k] = map[string]any{"M": streamJSON(t, a.Value)}
		case *types.AttributeValueMemberNULL:
			out[k] = map[string]any{"NULL": true}
		default:
			t.Fatalf("attribute %s: %T not modelled", k, v)
		}
	}
	return out
}

// filterMatches models Lambda event filtering (Lambda developer guide,
// invocation-eventfiltering.html): every key of the pattern must match;
// an object descends into the event's object of that key; a list is the
// values a leaf may take, any of which matches, where {"exists": true}
// matches a leaf that is present and {"exists": false} one that is not
// ("exists" only matches leaf nodes).
func filterMatches(pattern, event map[string]any) bool {
	for k, p := range pattern {
		v, present := event[k]
		switch p := p.(type) {
		case map[string]any:
			sub, ok := v.(map[string]any)
			if !ok || !filterMatches(p, sub) {
				return false
			}
		case []any:
			_, intermediate := v.(map[string]any)
			matched := false
			for _, rule := range p {
				if r, ok := rule.(map[string]any); ok {
					if e, ok := r["exists"].(bool); ok && e == (present && !intermediate) {
						matched = true
					}
				} else if present && fmt.Sprint(v) == fmt.Sprint(rule) {
					matched = true
				}
			}
			if !matched {
				return false
			}
		}
	}
	return true
}

// The stream filter passes the records of jobs with a callback, every
// write of them, as pkg/dynamodb writes them, and nothing else: a job
// without one, and a removal (TTL), never invoke the notifier. The
// records that pass are those the notifier reads a callback from.
func TestStreamFilterPassesCallbackJobs(t *testing.T) {
	s := defaults(t)
	var pattern map[string]any
	if err := json.Unmarshal([]byte(mapping(t, s, "notifier", jobsTable(t, s))["FilterCriteria"].(map[string]any)["Filters"].([]any)[0].(map[string]any)["Pattern"].(string)), &pattern); err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 12, 3, 0, 0, 0, 0, time.UTC)
	image := func(cb job.Callback) map[string]any {
		rec := &itemRecorder{}
		j := job.Job{ID: "job_1", Tenant: "iam:1:AROA", Model: "default", State: job.Queued, MaxAttempts: 4, Budget: job.Cents(50),
			Input: json.RawMessage(`{"messages":[]}`), CreatedAt: now, UpdatedAt: now, Deadline: now.Add(time.Hour), Callback: cb}
		if _, err := dynamodb.New(rec, "t", s.cfg.Settings).Create(t.Context(), j); err != nil || rec.item == nil {
			t.Fatalf("Create: %v", err)
		}
		return streamJSON(t, rec.item)
	}
	record := func(name string, newImage map[string]any) map[string]any {
		d := map[string]any{"Keys": map[string]any{"id": map[string]any{"S": "job_1"}}, "StreamViewType": "NEW_AND_OLD_IMAGES"}
		if newImage != nil {
			d["NewImage"] = newImage
		}
		return map[string]any{"eventName": name, "eventSource": "aws:dynamodb", "dynamodb": d}
	}
	with := image(job.Callback{URL: "https://example.com/hook", Events: job.TerminalEvents})
	without := image(job.Callback{})
	for name, tc := range map[string]struct {
		record map[string]any
		want   bool
	}{
		"insert with a callback":    {record("INSERT", with), true},
		"modify with a callback":    {record("MODIFY", with), true},
		"insert without a callback": {record("INSERT", without), false},
		"modify without a callback": {record("MODIFY", without), false},
		"removal":                   {record("REMOVE", nil), false},
	} {
		if got := filterMatches(pattern, tc.record); got != tc.want {
			t.Errorf("%s: filter passes %v, want %v", name, got, tc.want)
		}
	}
	if _, ok := with[attrCallbackURL]; !ok {
		t.Fatalf("pkg/dynamodb keeps the callback URL elsewhere than %s: %v", attrCallbackURL, sortedKeys(with))
	}
}

// jobsTable is the logical id of the jobs table (the other is the
// tenants table).
func jobsTable(t *testing.T, s *synthesized) string {
	t.Helper()
	id, _ := s.one(t, "AWS::DynamoDB::Table", named("TableName", s.cfg.Settings.TableName()))
	return id
}

// The signing secret's first value is one the notifier accepts. What
// CloudFormation does is simulated from the template: Secrets Manager
// generates PasswordLength characters from the classes left in
// (GetRandomPassword: ExcludePunctuation leaves letters and digits,
// IncludeSpace false no space), and CloudFormation puts that string where
// the dynamic reference to the seed stands in the signing secret's value
// (dynamic-references-secretsmanager.html). Many draws, each through
// webhook.ParseSecrets.
func TestWebhookSecret(t *testing.T) {
	s := defaults(t)
	st := s.cfg.Settings
	seedID, seed := s.one(t, "AWS::SecretsManager::Secret", named("Name", st.WebhookSecretName()+"-seed"))
	secretID, secret := s.one(t, "AWS::SecretsManager::Secret", named("Name", st.WebhookSecretName()))
	if n := len(s.resources("AWS::SecretsManager::Secret")); n != 2 {
		t.Errorf("%d secrets, want the signing secret and its seed", n)
	}
	gen, _ := seed["GenerateSecretString"].(map[string]any)
	if gen["ExcludePunctuation"] != true || gen["IncludeSpace"] != false || gen["SecretStringTemplate"] != nil || gen["ExcludeCharacters"] != nil {
		t.Fatalf("seed generator %v, want letters and digits only, as a plain string", gen)
	}
	length := int(num(t, gen["PasswordLength"], "PasswordLength"))
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
	// Pinned: a change to the signing secret's properties makes
	// CloudFormation update it, which sets its value back to the seed's and
	// undoes any rotation (docs/deploy.md, "The webhook signing secret").
	value, _ := secret["SecretString"].(map[string]any)
	want := map[string]any{"Fn::Join": []any{"", []any{"whsec_{{resolve:secretsmanager:", map[string]any{"Ref": seedID}, ":SecretString:::}}"}}}
	if got, _ := json.Marshal(value); string(got) != string(must2(json.Marshal(want))) || secret["GenerateSecretString"] != nil ||
		secret["KmsKeyId"] != nil || len(secret) != 3 {
		t.Fatalf("signing secret %v, want exactly Name, Description and SecretString %s", secret, must2(json.Marshal(want)))
	}
	// The description too: it says only the notifier reads the secret,
	// which the API's key routes now also do, but a deployed secret whose
	// description changed would be updated, its value set back to the
	// seed's (the API's reader is in the stack's output and its role's
	// description instead).
	const stale = "aijobs: the webhook signing secret(s), \"whsec_...\" (a second one after a space during a rotation); only the notifier reads it"
	if secret["Description"] != stale {
		t.Errorf("signing secret description %q changed: a deploy would undo a rotation; want %q", secret["Description"], stale)
	}
	parts := value["Fn::Join"].([]any)[1].([]any)
	for range 200 {
		key := make([]byte, length)
		for i := range key {
			key[i] = alphabet[rand.IntN(len(alphabet))]
		}
		resolved := strings.TrimSuffix(parts[0].(string), "{{resolve:secretsmanager:") + string(key) +
			strings.TrimPrefix(parts[2].(string), ":SecretString:::}}")
		secrets, err := webhook.ParseSecrets(resolved)
		if err != nil || len(secrets) != 1 {
			t.Fatalf("first value %q: %v", resolved, err)
		}
		if raw, _ := base64.StdEncoding.DecodeString(string(key)); len(raw) < 24 || len(raw) > 64 {
			t.Fatalf("key of %d bytes", len(raw))
		}
	}
	// Kept with the table; deleted with a throwaway stack.
	for _, id := range []string{seedID, secretID} {
		if r := s.resources("AWS::SecretsManager::Secret")[id]; r["DeletionPolicy"] != "Retain" {
			t.Errorf("secret %s: DeletionPolicy %v, want Retain", id, r["DeletionPolicy"])
		}
	}
	thrown := build(t, map[string]any{"throwaway": "true"}, false)
	for id, r := range thrown.resources("AWS::SecretsManager::Secret") {
		if r["DeletionPolicy"] != "Delete" {
			t.Errorf("throwaway secret %s: DeletionPolicy %v", id, r["DeletionPolicy"])
		}
	}
	// The notifier and the API (its webhook key routes) read it by ARN;
	// no other function is told of it.
	for _, fn := range functionNames {
		env := functionEnv(t, s, fn)
		if got := ref(env["AIJOBS_WEBHOOK_SECRET_ID"]); (fn == "notifier" || fn == "api") != (got == secretID) {
			t.Errorf("%s: AIJOBS_WEBHOOK_SECRET_ID = %v", fn, env["AIJOBS_WEBHOOK_SECRET_ID"])
		}
	}
}

func must2(b []byte, err error) []byte {
	if err != nil {
		panic(err)
	}
	return b
}

// The notifier's sweep of the callback DLQ (pkg/notifier.Sweep, which its
// Handle runs for an EventBridge event) is scheduled as often as the
// reconciler's, with the same retry and event age, so a redriven notice is
// counted within a period (TestCallbackDLQArrivalAlarmSimulation).
func TestCallbackSweepSchedule(t *testing.T) {
	s := defaults(t)
	st := s.cfg.Settings
	fnID, _ := s.one(t, "AWS::Lambda::Function", named("FunctionName", st.Prefix+"-notifier"))
	_, reconcile := s.one(t, "AWS::Events::Rule", named("Name", st.Prefix+"-reconcile"))
	if reconcile["ScheduleExpression"] != "rate(5 minutes)" {
		t.Errorf("reconcile rule %v, want rate(5 minutes)", reconcile)
	}
	checkSchedule(t, s, "callback-sweep", fnID, "rate(5 minutes)", st.ReconcileEvery.Seconds())
}
