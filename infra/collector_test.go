package main

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/aijobs/aijobs/pkg/emf"
)

// batchRoutes offer two batch lanes: the fake's on the default route and
// OpenAI's (its key in Secrets Manager) on "nightly"; "direct" calls
// Anthropic, whose key only the worker reads.
const batchRoutes = `{
  "providers": {
    "fake":      {"kind": "fake"},
    "openai":    {"kind": "openai", "base_url": "https://api.openai.com/v1", "api_key_secret": "aijobs/openai"},
    "anthropic": {"kind": "anthropic", "api_key_secret": "aijobs/anthropic"}
  },
  "routes": {
    "default": {"rungs": [{"provider": "fake", "price": {"input": "1", "output": "2"},
                           "lanes": {"batch": {"price": {"input": "0.5", "output": "1"}, "p99": "1h"}}}]},
    "nightly": {"rungs": [{"provider": "openai", "model": "gpt-4o-mini", "price": {"input": "15", "output": "60"},
                           "lanes": {"batch": {"price": {"input": "7.5", "output": "30"}, "p99": "24h"}}}]},
    "direct":  {"rungs": [{"provider": "anthropic", "model": "claude-haiku-4-5", "price": {"input": "100", "output": "500"}}]}
  }
}`

// The secrets batchRoutes name, as the stack grants them.
const (
	openaiKey    = "arn:${AWS::Partition}:secretsmanager:${AWS::Region}:${AWS::AccountId}:secret:aijobs/openai-??????"
	anthropicKey = "arn:${AWS::Partition}:secretsmanager:${AWS::Region}:${AWS::AccountId}:secret:aijobs/anthropic-??????"
)

// batched is the stack with batchRoutes, synthesized once.
func batched(t *testing.T) *synthesized {
	t.Helper()
	return batchedStack.withRoutes(t, "batched", batchRoutes)
}

var batchedStack sharedStack

// A route with a batch lane synthesizes the collector: its function, its
// role, its schedule, its alarm, its dashboard row and its output; a
// stack whose routes offer none (the defaults, the routes of the other
// tests, flex and priority lanes included) has none of them.
func TestCollectorOnlyWithABatchLane(t *testing.T) {
	flex := build(t, map[string]any{"AIJOBS_ROUTES": `{"providers":{"f":{"kind":"fake"}},"routes":{"default":{"rungs":[{"provider":"f",` +
		`"price":{"input":1,"output":2},"timeout":"30s","lanes":{"flex":{"price":{"input":1,"output":1},"timeout":"60s"}}}]}}}`}, false)
	for name, tc := range map[string]struct {
		s    *synthesized
		want int
	}{"defaults": {defaults(t), 0}, "routes": {routed(t), 0}, "flex lane": {flex, 0}, "batch lanes": {batched(t), 1}} {
		s, prefix := tc.s, tc.s.cfg.Settings.Prefix
		count := func(typ string, pick func(map[string]any) bool) int {
			n := 0
			for _, r := range s.resources(typ) {
				if p, _ := r["Properties"].(map[string]any); pick(p) {
					n++
				}
			}
			return n
		}
		outputs := s.json["Outputs"].(map[string]any)
		_, output := outputs["CollectorFunctionName"]
		dashboard, _ := s.one(t, "AWS::CloudWatch::Dashboard", nil)
		body := render(s.resources("AWS::CloudWatch::Dashboard")[dashboard]["Properties"].(map[string]any)["DashboardBody"])
		for what, n := range map[string]int{
			"function":      count("AWS::Lambda::Function", named("FunctionName", prefix+"-collector")),
			"schedule":      count("AWS::Events::Rule", named("Name", prefix+"-collect")),
			"alarm":         count("AWS::CloudWatch::Alarm", named("AlarmName", prefix+"-CollectorErrors")),
			"refusal alarm": count("AWS::CloudWatch::Alarm", named("AlarmName", prefix+"-BatchesRefused")),
			"role":          len(s.resources("AWS::IAM::Role")) - len(functionNames),
			"output":        map[bool]int{false: 0, true: 1}[output],
			"dashboard row": strings.Count(body, "Collector runs, errors, throttles"),
		} {
			if n != tc.want {
				t.Errorf("%s: %d collector %s, want %d", name, n, what, tc.want)
			}
		}
		// The collector's two alarms: CollectorErrors and BatchesRefused.
		if n := len(s.resources("AWS::CloudWatch::Alarm")); n != 20+2*tc.want {
			t.Errorf("%s: %d alarms, want %d", name, n, 20+2*tc.want)
		}
	}
}

// The collector is sized by the settings, its timeout below its period so
// a run ends before the next is due; one runs at a time (reserved
// concurrency 1); Lambda neither retries a failed run nor keeps an
// unstarted one past a period (the schedule is the retry); EventBridge
// runs it every AIJOBS_COLLECT_EVERY; and its environment is the
// worker's, so it loads the same settings and routes.
func TestCollectorFunctionAndSchedule(t *testing.T) {
	for name, tc := range map[string]struct {
		s                    *synthesized
		rate                 string
		period, timeout, mem float64
	}{
		"defaults": {batched(t), "rate(1 minute)", 60, 50, 256},
		"tuned": {build(t, map[string]any{"AIJOBS_ROUTES": batchRoutes, "AIJOBS_COLLECT_EVERY": "5m", "collectorTimeout": "4m",
			"collectorMemoryMB": "512"}, false), "rate(5 minutes)", 300, 240, 512},
	} {
		t.Run(name, func(t *testing.T) {
			s := tc.s
			st := s.cfg.Settings
			fnID, fn := s.one(t, "AWS::Lambda::Function", named("FunctionName", st.Prefix+"-collector"))
			if fn["Runtime"] != "provided.al2023" || fn["Handler"] != "bootstrap" || strings.Join(strs(fn["Architectures"]), ",") != "arm64" {
				t.Errorf("runtime %v handler %v architectures %v", fn["Runtime"], fn["Handler"], fn["Architectures"])
			}
			if fn["MemorySize"] != tc.mem || fn["Timeout"] != tc.timeout || fn["ReservedConcurrentExecutions"] != 1.0 {
				t.Errorf("memory %v timeout %v reserved %v, want %v, %v, 1", fn["MemorySize"], fn["Timeout"], fn["ReservedConcurrentExecutions"], tc.mem, tc.timeout)
			}
			if num(t, fn["Timeout"], "Timeout") >= st.CollectEvery.Seconds() {
				t.Errorf("timeout %v not below the period %s", fn["Timeout"], st.CollectEvery)
			}
			logging, _ := fn["LoggingConfig"].(map[string]any)
			if lg := s.resources("AWS::Logs::LogGroup")[ref(logging["LogGroup"])]; logging["LogFormat"] != "JSON" || lg == nil {
				t.Errorf("logging %v", logging)
			}
			_, invoke := s.one(t, "AWS::Lambda::EventInvokeConfig", func(p map[string]any) bool { return ref(p["FunctionName"]) == fnID })
			if invoke["MaximumRetryAttempts"] != 0.0 || invoke["MaximumEventAgeInSeconds"] != tc.period {
				t.Errorf("invoke config %v, want no retries and events at most %v s old", invoke, tc.period)
			}
			checkSchedule(t, s, "collect", fnID, tc.rate, tc.period)
			env := functionEnv(t, s, "collector")
			if worker := functionEnv(t, s, "worker"); !reflect.DeepEqual(env, worker) {
				t.Errorf("collector environment %v, want the worker's %v", env, worker)
			}
			got, want := loadEnv(t, "collector", env).Settings, st
			// Not environment variables: the stack applies them itself.
			got.CollectorTimeout, got.CollectorMemoryMB = want.CollectorTimeout, want.CollectorMemoryMB
			if !reflect.DeepEqual(got, want) {
				t.Errorf("the collector loads settings\n%+v\nthe stack was built from\n%+v", got, want)
			}
		})
	}
}

// collectorGrants is what every collector may call, but logs and what
// its batch lanes' providers add (a key, Bedrock's batches).
func collectorGrants(t *testing.T, s *synthesized) []string {
	t.Helper()
	st := s.cfg.Settings
	table := jobsTable(t, s)
	queue, _ := s.one(t, "AWS::SQS::Queue", named("QueueName", st.QueueName()))
	buckets, _ := s.one(t, "AWS::DynamoDB::Table", named("TableName", st.BucketsTableName()))
	const batchKeys = ` if ForAllValues:StringLike dynamodb:LeadingKeys=["batch#*","batches#open"]`
	return append([]string{
		"dynamodb:GetItem on " + table, "dynamodb:UpdateItem on " + table, // reads, collects, settles, hands back
		"dynamodb:Query on ${" + table + ".Arn}/index/" + st.EnlistedIndex, // the jobs waiting in each lane
		// its batch records: opened and saved, read, listed open; those
		// items only (batch#<id>, batches#open)
		"dynamodb:GetItem on " + buckets + batchKeys, "dynamodb:PutItem on " + buckets + batchKeys,
		"dynamodb:UpdateItem on " + buckets + batchKeys,
		"sqs:SendMessage on " + queue, // a job handed back
	}, payloadGrants(t, s)["collector"]...)
}

// Each function may call exactly what it calls: the collector its tables,
// index, queue and the key of the one batch lane provider that has one
// (not Anthropic's, which only the worker reads), and its log group; the
// worker reads both keys; the others are as without routes.
func TestCollectorPermissionsAreExact(t *testing.T) {
	s := batched(t)
	want := basePermissions(t, s)
	want["worker"] = append(want["worker"], "secretsmanager:GetSecretValue on "+anthropicKey, "secretsmanager:GetSecretValue on "+openaiKey)
	want["collector"] = append(collectorGrants(t, s), "secretsmanager:GetSecretValue on "+openaiKey) // the one batch lane provider with a key
	for fn, w := range want {
		role, group := roleOf(t, s, fn)
		w = append(w, "logs:CreateLogStream on "+group, "logs:PutLogEvents on "+group)
		if got := grants(t, s, role); !equalSets(got, w) {
			t.Errorf("%s may\n  %s\nwant exactly\n  %s", fn, strings.Join(got, "\n  "), strings.Join(w, "\n  "))
		}
	}
	if n := len(s.resources("AWS::IAM::Role")); n != len(want) {
		t.Errorf("%d roles, want the %d function roles only", n, len(want))
	}
}

// roleEnv resolves the ARNs a function's role names as CloudFormation
// would in account 111122223333, us-east-1 (stackEnv, plus the tables,
// their streams, the queues, the log groups, the buckets, the secret and
// the roles).
func roleEnv(s *synthesized) map[string]string {
	env := stackEnv(s)
	for id, r := range s.json["Resources"].(map[string]any) {
		p, _ := r.(map[string]any)["Properties"].(map[string]any)
		switch r.(map[string]any)["Type"] {
		case "AWS::DynamoDB::Table":
			env[id+".Arn"] = "arn:aws:dynamodb:us-east-1:111122223333:table/" + p["TableName"].(string)
			env[id+".StreamArn"] = env[id+".Arn"] + "/stream/2026-12-06T00:00:00.000"
		case "AWS::SQS::Queue":
			env[id+".Arn"] = "arn:aws:sqs:us-east-1:111122223333:" + p["QueueName"].(string)
		case "AWS::Logs::LogGroup":
			env[id+".Arn"] = "arn:aws:logs:us-east-1:111122223333:log-group:" + id + ":*" // CloudFormation's Arn ends in :*
		case "AWS::S3::Bucket":
			env[id+".Arn"] = "arn:aws:s3:::" + strings.ToLower(id)
		case "AWS::SecretsManager::Secret":
			env[id] = "arn:aws:secretsmanager:us-east-1:111122223333:secret:" + p["Name"].(string) + "-AbCdEf"
		case "AWS::IAM::Role":
			env[id+".Arn"] = "arn:aws:iam::111122223333:role/" + id
		}
	}
	return env
}

// The collector's role, evaluated as IAM would: it may make every call a
// run makes, on the resources it makes them on, and nothing of the sort
// it does not need: no other index, no scan or delete, no other table,
// queue, secret or log group, no Bedrock, no parking bucket.
func TestCollectorPolicySimulation(t *testing.T) {
	s := batched(t)
	st := s.cfg.Settings
	env := roleEnv(s)
	role, logs := roleOf(t, s, "collector")
	_, workerLogs := roleOf(t, s, "worker")
	doc := s.resources("AWS::IAM::Role")[role]["Properties"].(map[string]any)["Policies"].([]any)[0].(map[string]any)["PolicyDocument"]
	arnOf := func(typ, key, value string) string {
		id, _ := s.one(t, typ, named(key, value))
		return env[id+".Arn"]
	}
	table, buckets := arnOf("AWS::DynamoDB::Table", "TableName", st.TableName()), arnOf("AWS::DynamoDB::Table", "TableName", st.BucketsTableName())
	queue, dlq := arnOf("AWS::SQS::Queue", "QueueName", st.QueueName()), arnOf("AWS::SQS::Queue", "QueueName", st.DLQName())
	secret := func(name string) string { return "arn:aws:secretsmanager:us-east-1:111122223333:secret:" + name }
	stream := func(group string) string {
		return strings.TrimSuffix(env[group+".Arn"], "*") + "log-stream:2026/12/06/[$LATEST]0123456789abcdef"
	}
	bucket, _ := parkBucket(t, s)
	may := map[string][]string{
		table:                                {"dynamodb:GetItem", "dynamodb:UpdateItem"},
		table + "/index/" + st.EnlistedIndex: {"dynamodb:Query"},
		buckets:                              {"dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem"},
		queue:                                {"sqs:SendMessage"},
		secret("aijobs/openai-AbCdEf"):       {"secretsmanager:GetSecretValue"},
		// both authorized against the stream's ARN (CloudWatch Logs
		// permissions reference)
		stream(logs): {"logs:CreateLogStream", "logs:PutLogEvents"},
	}
	mayNot := map[string][]string{
		table: {"dynamodb:PutItem", "dynamodb:DeleteItem", "dynamodb:Scan", "dynamodb:Query", "dynamodb:BatchWriteItem",
			"dynamodb:BatchGetItem", "dynamodb:TransactWriteItems"},
		table + "/index/" + st.ActiveIndex:                                   {"dynamodb:Query"},
		table + "/index/" + st.TenantIndex:                                   {"dynamodb:Query"},
		table + "/index/" + st.FailureIndex:                                  {"dynamodb:Query"},
		table + "/index/" + st.CreatedIndex:                                  {"dynamodb:Query"},
		table + "/index/" + st.EnlistedIndex:                                 {"dynamodb:Scan"},
		env[jobsTable(t, s)+".StreamArn"]:                                    {"dynamodb:GetRecords"},
		buckets:                                                              {"dynamodb:DeleteItem", "dynamodb:Scan", "dynamodb:Query"},
		arnOf("AWS::DynamoDB::Table", "TableName", st.TenantsTableName()):    {"dynamodb:GetItem", "dynamodb:UpdateItem"},
		arnOf("AWS::DynamoDB::Table", "TableName", st.QuarantineTableName()): {"dynamodb:GetItem", "dynamodb:PutItem"},
		queue: {"sqs:ReceiveMessage", "sqs:DeleteMessage", "sqs:ChangeMessageVisibility", "sqs:PurgeQueue"},
		dlq:   {"sqs:SendMessage", "sqs:ReceiveMessage"},
		arnOf("AWS::SQS::Queue", "QueueName", st.CallbackQueueName()):       {"sqs:SendMessage"},
		secret("aijobs/anthropic-AbCdEf"):                                   {"secretsmanager:GetSecretValue"}, // the worker's alone
		secret("aijobs/openai-admin-AbCdEf"):                                {"secretsmanager:GetSecretValue"}, // "-??????" is six characters
		secret(st.WebhookSecretName() + "-AbCdEf"):                          {"secretsmanager:GetSecretValue"},
		secret("aijobs/openai-AbCdEf"):                                      {"secretsmanager:PutSecretValue", "secretsmanager:DescribeSecret"},
		"arn:aws:bedrock:us-east-1::foundation-model/amazon.nova-lite-v1:0": {"bedrock:InvokeModel", "bedrock:CreateModelInvocationJob"},
		env[bucket+".Arn"] + "/parked/job_1/owner":                          {"s3:GetObject", "s3:PutObject"},
		stream(workerLogs):                                                  {"logs:PutLogEvents"},
	}
	for resource, actions := range may {
		for _, a := range actions {
			if ok, why := allows(t, doc, request{identity: true, action: a, resource: resource}, env); !ok {
				t.Errorf("the collector may not %s on %s (%s): a run needs it", a, resource, why)
			}
		}
	}
	for resource, actions := range mayNot {
		for _, a := range actions {
			if ok, why := allows(t, doc, request{identity: true, action: a, resource: resource}, env); ok {
				t.Errorf("the collector may %s on %s (%s): it never needs to", a, resource, why)
			}
		}
	}
}

// What the collector adds to the shared environment is covered by the
// size check: the first five of the estimate and the buckets table.
func TestCollectorEnvironmentSize(t *testing.T) {
	s := batched(t)
	var added []string
	for k := range functionEnv(t, s, "collector") {
		if _, ok := s.cfg.Env[k]; !ok {
			added = append(added, k)
		}
	}
	want := []string{"AIJOBS_TABLE", "AIJOBS_QUEUE_URL", "AIJOBS_DLQ_URL", "AIJOBS_PARK_BUCKET", "AIJOBS_QUARANTINE_TABLE", "AIJOBS_BUCKETS_TABLE",
		"AIJOBS_PAYLOAD_BUCKET"}
	if !equalSets(added, want) {
		t.Errorf("the stack adds %v to the collector's environment, want %v", added, want)
	}
}

// A stack with a batch lane does not synthesize with a collector that
// cannot be scheduled or could outlast its period, or without its
// binary; without a batch lane none of that is checked (nothing is
// deployed to break it).
func TestLoadConfigRefusesABadCollector(t *testing.T) {
	dir := t.TempDir()
	for _, fn := range append(functionNames, collectorName) {
		_ = os.MkdirAll(filepath.Join(dir, fn), 0o755)
		_ = os.WriteFile(filepath.Join(dir, fn, "bootstrap"), []byte("x"), 0o755)
	}
	base := map[string]any{"AIJOBS_ROUTES": batchRoutes}
	for _, fn := range append(functionNames, collectorName) {
		base[fn+"AssetDir"] = filepath.Join(dir, fn)
	}
	with := func(kv ...string) map[string]any {
		ctx := maps.Clone(base)
		for i := 0; i < len(kv); i += 2 {
			ctx[kv[i]] = kv[i+1]
		}
		return ctx
	}
	for name, tc := range map[string]struct {
		ctx  map[string]any
		want string
	}{
		"period in seconds":     {with("AIJOBS_COLLECT_EVERY", "90s"), "collect every 1m30s"},
		"timeout at the period": {with("collectorTimeout", "60s"), "collector timeout 1m0s must be below"},
		"timeout over a period": {with("AIJOBS_COLLECT_EVERY", "2m", "collectorTimeout", "3m"), "below the collector's period 2m0s"},
		"timeout in ms":         {with("collectorTimeout", "30500ms"), "collector timeout 30.5s"},
		"timeout under 10s":     {with("collectorTimeout", "5s"), "collector timeout 5s below 10s"},
		"memory":                {with("collectorMemoryMB", "64"), "collector memory"},
		"no binary":             {with("collectorAssetDir", filepath.Join(dir, "nothing")), "collectorAssetDir"},
		// A Bedrock batch lane's bucket and role are the stack's to make
		// (bedrockbatch_test.go), not the context's.
		"batch bucket": {with("AIJOBS_BATCH_BUCKET", "mine"), "AIJOBS_BATCH_BUCKET"},
		"batch role":   {with("AIJOBS_BATCH_ROLE_ARN", "arn:aws:iam::123456789012:role/mine"), "AIJOBS_BATCH_ROLE_ARN"},
		// The synth reads the routes with config.Load, as the functions
		// do: a Bedrock batch lane below Bedrock's minimum (100 records a
		// job) is refused there too.
		"bedrock min_jobs below 100": {with("AIJOBS_ROUTES", strings.Replace(bedrockBatchRoutes, `"p99": "24h"}`, `"p99": "24h", "min_jobs": 10}`, 1)),
			"min_jobs 10: want 100"},
		"bedrock max_jobs below 100": {with("AIJOBS_ROUTES", strings.Replace(bedrockBatchRoutes, `"p99": "24h"}`, `"p99": "24h", "max_jobs": 50}`, 1)),
			"max_jobs 50: want 100"},
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := LoadConfig(mapLookup(tc.ctx)); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("LoadConfig = %v, want an error about %q", err, tc.want)
			}
		})
	}
	if _, err := LoadConfig(mapLookup(base)); err != nil {
		t.Fatalf("batch lanes refused: %v", err)
	}
	plain := with("AIJOBS_COLLECT_EVERY", "90s", "collectorAssetDir", filepath.Join(dir, "nothing"))
	delete(plain, "AIJOBS_ROUTES")
	if _, err := LoadConfig(mapLookup(plain)); err != nil {
		t.Fatalf("without a batch lane, the collector's period and binary matter not: %v", err)
	}
}

// CollectorErrors fires on one failed run, as ReconcilerErrors does, and
// says what to do.
func TestCollectorAlarm(t *testing.T) {
	s := batched(t)
	collector, _ := s.one(t, "AWS::Lambda::Function", named("FunctionName", s.cfg.Settings.Prefix+"-collector"))
	topic, _ := s.one(t, "AWS::SNS::Topic", nil)
	a := alarm(t, s, "CollectorErrors")
	dims := a["Dimensions"].([]any)[0].(map[string]any)
	if a["MetricName"] != "Errors" || a["Namespace"] != "AWS/Lambda" || ref(dims["Value"]) != collector || a["Threshold"] != 1.0 ||
		a["Statistic"] != "Sum" || a["Period"] != 300.0 || a["ComparisonOperator"] != "GreaterThanOrEqualToThreshold" ||
		a["TreatMissingData"] != "notBreaching" {
		t.Errorf("CollectorErrors %v, want the collector's Errors >= 1", a)
	}
	for _, k := range []string{"AlarmActions", "OKActions"} {
		if acts, _ := a[k].([]any); len(acts) != 1 || ref(acts[0]) != topic {
			t.Errorf("%s = %v, want the alarm topic", k, a[k])
		}
	}
	d, _ := a["AlarmDescription"].(string)
	if !strings.Contains(d, "log group") || !strings.Contains(d, "next run") || !strings.Contains(d, "hold returned") || !strings.Contains(d, "written off") || len(d) > 1024 {
		t.Errorf("CollectorErrors description (%d characters) %q does not say what to do in CloudWatch's 1024", len(d), d)
	}
}

// BatchesRefused fires on one batch a provider refused to make (the
// collector's EMF count, no dimension, as pkg/collector emits it),
// notifies the alarm topic, and says what happened and what to do.
func TestBatchesRefusedAlarm(t *testing.T) {
	s := batched(t)
	topic, _ := s.one(t, "AWS::SNS::Topic", nil)
	a := alarm(t, s, "BatchesRefused")
	if a["MetricName"] != "BatchesRefused" || a["Namespace"] != emf.Namespace || a["Dimensions"] != nil || a["Threshold"] != 1.0 ||
		a["Statistic"] != "Sum" || a["Period"] != 300.0 || a["ComparisonOperator"] != "GreaterThanOrEqualToThreshold" ||
		a["TreatMissingData"] != "notBreaching" {
		t.Errorf("BatchesRefused %v, want the collector's BatchesRefused >= 1", a)
	}
	for _, k := range []string{"AlarmActions", "OKActions"} {
		if acts, _ := a[k].([]any); len(acts) != 1 || ref(acts[0]) != topic {
			t.Errorf("%s = %v, want the alarm topic", k, a[k])
		}
	}
	d, _ := a["AlarmDescription"].(string)
	for _, want := range []string{"4xx", "charged nothing", "log group", "the provider refused a batch", "100 records"} {
		if !strings.Contains(d, want) || len(d) > 1024 {
			t.Errorf("BatchesRefused description (%d characters) %q does not say %q in CloudWatch's 1024", len(d), d, want)
		}
	}
	if !slices.ContainsFunc(dashboardMetrics(t, s), func(u usedMetric) bool { return u.name == "BatchesRefused" }) {
		t.Error("the dashboard does not graph BatchesRefused")
	}
}

// The dashboard's collector row graphs the collector function's runs,
// failed runs, throttles and duration (against its timeout), all of it
// the collector's own, and the jobs no collector took in time.
func TestCollectorDashboardRow(t *testing.T) {
	s := batched(t)
	collector, _ := s.one(t, "AWS::Lambda::Function", named("FunctionName", s.cfg.Settings.Prefix+"-collector"))
	var got []string
	for _, w := range dashboardWidgets(t, s) {
		if !strings.HasPrefix(w.Properties.Title, "Collector runs") {
			continue
		}
		for _, row := range w.Properties.Metrics {
			if len(row) < 4 || row[0] != "AWS/Lambda" || row[2] != "FunctionName" || row[3] != "${"+collector+"}" {
				t.Errorf("%s graphs %v, want the collector's own Lambda metrics", w.Properties.Title, row)
				continue
			}
			got = append(got, fmt.Sprint(row[1]))
		}
	}
	if !equalSets(got, []string{"Invocations", "Errors", "Throttles", "Duration", "Duration"}) {
		t.Errorf("the collector row graphs %v, want its invocations, errors, throttles and duration (p99, maximum)", got)
	}
	if !slices.ContainsFunc(dashboardMetrics(t, s), func(u usedMetric) bool { return u.name == "AttemptsUncollected" }) {
		t.Error("the dashboard does not graph AttemptsUncollected")
	}
}
