package main

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/aijobs/aijobs/pkg/config"
	"github.com/aijobs/aijobs/pkg/settings"
)

func TestFunctions(t *testing.T) {
	s := defaults(t)
	st := s.cfg.Settings
	for _, fn := range []struct {
		name    string
		memory  int
		timeout float64
	}{
		{"api", st.APIMemoryMB, st.APITimeout.Seconds()},
		{"worker", st.WorkerMemoryMB, st.WorkerTimeout.Seconds()},
		{"reconciler", st.ReconcilerMemoryMB, st.ReconcilerTimeout.Seconds()},
		{"notifier", st.NotifierMemoryMB, st.NotifierTimeout.Seconds()},
	} {
		_, props := s.one(t, "AWS::Lambda::Function", named("FunctionName", st.Prefix+"-"+fn.name))
		if props["Runtime"] != "provided.al2023" || props["Handler"] != "bootstrap" {
			t.Errorf("%s: runtime %v handler %v", fn.name, props["Runtime"], props["Handler"])
		}
		if a := strs(props["Architectures"]); len(a) != 1 || a[0] != "arm64" {
			t.Errorf("%s: architectures %v", fn.name, a)
		}
		if num(t, props["MemorySize"], "MemorySize") != float64(fn.memory) || num(t, props["Timeout"], "Timeout") != fn.timeout {
			t.Errorf("%s: memory %v timeout %v, settings say %d / %v", fn.name, props["MemorySize"], props["Timeout"], fn.memory, fn.timeout)
		}
		logging, _ := props["LoggingConfig"].(map[string]any)
		group := ref(logging["LogGroup"])
		if logging["LogFormat"] != "JSON" || group == "" {
			t.Errorf("%s: logging %v", fn.name, logging)
			continue
		}
		lg := s.resources("AWS::Logs::LogGroup")[group]
		if lg == nil || num(t, lg["Properties"].(map[string]any)["RetentionInDays"], "RetentionInDays") != 30 {
			t.Errorf("%s: log group %s %v, want 30 days retention", fn.name, group, lg)
		}
		env := props["Environment"].(map[string]any)["Variables"].(map[string]any)
		tableID := jobsTable(t, s)
		queueID, _ := s.one(t, "AWS::SQS::Queue", named("QueueName", st.QueueName()))
		dlqID, _ := s.one(t, "AWS::SQS::Queue", named("QueueName", st.DLQName()))
		bucketID, _ := parkBucket(t, s)
		payloadID, _ := payloadBucket(t, s)
		for k, want := range map[string]string{"AIJOBS_TABLE": tableID, "AIJOBS_QUEUE_URL": queueID, "AIJOBS_DLQ_URL": dlqID,
			"AIJOBS_PARK_BUCKET": bucketID, "AIJOBS_PAYLOAD_BUCKET": payloadID} {
			if ref(env[k]) != want {
				t.Errorf("%s: %s = %v, want a reference to %s", fn.name, k, env[k], want)
			}
		}
		if env["AIJOBS_PREFIX"] != st.Prefix {
			t.Errorf("%s: AIJOBS_PREFIX = %v", fn.name, env["AIJOBS_PREFIX"])
		}
		// The API checks a callback_url at create (callbacks on, the
		// default); only the notifier is told where its queues are, and
		// only it and the API (its webhook key routes) where the signing
		// secret and the tenants table are.
		if env["AIJOBS_CALLBACKS"] != "true" {
			t.Errorf("%s: AIJOBS_CALLBACKS = %v, want true", fn.name, env["AIJOBS_CALLBACKS"])
		}
		callbacks, _ := s.one(t, "AWS::SQS::Queue", named("QueueName", st.CallbackQueueName()))
		callbackDLQ, _ := s.one(t, "AWS::SQS::Queue", named("QueueName", st.CallbackDLQName()))
		secret, _ := s.one(t, "AWS::SecretsManager::Secret", named("Name", st.WebhookSecretName()))
		tenants, _ := s.one(t, "AWS::DynamoDB::Table", named("TableName", st.TenantsTableName()))
		signs := fn.name == "notifier" || fn.name == "api"
		for k, want := range map[string]string{"AIJOBS_CALLBACK_QUEUE_URL": callbacks, "AIJOBS_CALLBACK_DLQ_URL": callbackDLQ,
			"AIJOBS_WEBHOOK_SECRET_ID": secret, "AIJOBS_TENANTS_TABLE": tenants} {
			if fn.name != "notifier" && !(signs && (k == "AIJOBS_WEBHOOK_SECRET_ID" || k == "AIJOBS_TENANTS_TABLE")) {
				want = ""
			}
			if ref(env[k]) != want || (want == "" && env[k] != nil) {
				t.Errorf("%s: %s = %v, want %q", fn.name, k, env[k], want)
			}
		}
		// Only the worker takes from the providers' rate-limit buckets
		// and the tenants' slots; the API enters its tenants' queued jobs;
		// the reconciler settles a dead-lettered attempt's spend holds.
		buckets, _ := s.one(t, "AWS::DynamoDB::Table", named("TableName", st.BucketsTableName()))
		uses := fn.name == "worker" || fn.name == "api" || fn.name == "reconciler"
		if uses && ref(env["AIJOBS_BUCKETS_TABLE"]) != buckets {
			t.Errorf("%s: AIJOBS_BUCKETS_TABLE = %v, want a reference to %s", fn.name, env["AIJOBS_BUCKETS_TABLE"], buckets)
		}
		if v, ok := env["AIJOBS_BUCKETS_TABLE"]; !uses && ok {
			t.Errorf("%s: AIJOBS_BUCKETS_TABLE = %v, want none (the worker's, the API's and the reconciler's alone)", fn.name, v)
		}
	}
}

// The functions must run with exactly the settings the stack was built
// from: load their environment, as read from the template, through the
// same config.Load the Lambdas call at start.
func TestEnvironmentReproducesSettings(t *testing.T) {
	routes := writeFile(t, "routes.json", testRoutes)
	compact, err := config.CompactRoutes(testRoutes)
	if err != nil {
		t.Fatal(err)
	}
	var routesObject map[string]any // as cdk.json would hold it
	if err := json.Unmarshal([]byte(testRoutes), &routesObject); err != nil {
		t.Fatal(err)
	}
	objectText, _ := json.Marshal(routesObject)
	for name, overrides := range map[string]map[string]any{
		"defaults":    nil,
		"overridden":  {"AIJOBS_BATCH_SIZE": "3", "AIJOBS_HEARTBEAT": "5s", "AIJOBS_LEASE_TTL": "20s", "AIJOBS_MAX_ATTEMPTS": "6", "AIJOBS_RECONCILE_EVERY": "2m"},
		"routes file": {"routesFile": routes},
		"routes":      {"AIJOBS_ROUTES": testRoutes},
		"routes JSON": {"AIJOBS_ROUTES": routesObject},
	} {
		t.Run(name, func(t *testing.T) {
			s := defaults(t)
			if overrides != nil {
				s = build(t, overrides, false)
			}
			var wantRoutes any
			switch {
			case name == "routes JSON":
				wantRoutes = string(objectText)
			case overrides["routesFile"] != nil || overrides["AIJOBS_ROUTES"] != nil:
				wantRoutes = compact
			}
			for _, fn := range functionNames {
				env := functionEnv(t, s, fn)
				if env["AIJOBS_ROUTES"] != wantRoutes {
					t.Errorf("%s: AIJOBS_ROUTES = %v, want %v", fn, env["AIJOBS_ROUTES"], wantRoutes)
				}
				known := map[string]bool{}
				for _, v := range config.Vars() {
					known[v.Name] = true
				}
				for k, v := range env {
					if !known[k] {
						t.Errorf("%s: %s is not a variable pkg/config reads", fn, k)
					}
					// The signing secret's id is the stack's secret's ARN, a
					// reference: its value never enters the template.
					if k == "AIJOBS_WEBHOOK_SECRET_ID" && ref(v) != "" {
						continue
					}
					if strings.Contains(k, "KEY") || strings.Contains(k, "SECRET") {
						t.Errorf("%s: %s=%v: secrets never go into the template", fn, k, v)
					}
				}
				want := s.cfg.Settings
				got := loadEnv(t, fn, env).Settings
				// Not environment variables: the stack applies them itself.
				got.APIMemoryMB, got.WorkerMemoryMB, got.APITimeout = want.APIMemoryMB, want.WorkerMemoryMB, want.APITimeout
				got.ReconcilerMemoryMB, got.ReconcilerTimeout = want.ReconcilerMemoryMB, want.ReconcilerTimeout
				if !reflect.DeepEqual(got, want) {
					t.Errorf("%s loads settings\n%+v\nthe stack was built from\n%+v", fn, got, want)
				}
			}
			for k, v := range overrides {
				if k == "routesFile" || k == "AIJOBS_ROUTES" {
					continue
				}
				if s.cfg.Env[k] != v {
					t.Errorf("override %s=%v not in the environment: %v", k, v, s.cfg.Env[k])
				}
			}
		})
	}
}

// With no context the stack is built from settings.Defaults() itself, and
// every function's environment loads back to exactly those settings (what
// the stack sets itself, memory and timeouts, included: config.Load starts
// from the same defaults). With pkg/config's tests (an empty environment,
// the dev server), the stack, the functions and the dev server agree on
// every number, and a default changed anywhere but pkg/settings fails here.
func TestDefaultStackRunsSettingsDefaults(t *testing.T) {
	s := defaults(t)
	want := settings.Defaults()
	if !reflect.DeepEqual(s.cfg.Settings, want) {
		t.Errorf("the default stack is built from\n%+v\nsettings.Defaults() is\n%+v", s.cfg.Settings, want)
	}
	for _, fn := range functionNames {
		if got := loadEnv(t, fn, functionEnv(t, s, fn)).Settings; !reflect.DeepEqual(got, want) {
			t.Errorf("%s loads settings\n%+v\nsettings.Defaults() is\n%+v", fn, got, want)
		}
	}
}

// functionEnv is the environment of the function <prefix>-<fn> as the
// template holds it: strings, and references resolved at deploy.
func functionEnv(t *testing.T, s *synthesized, fn string) map[string]any {
	t.Helper()
	_, props := s.one(t, "AWS::Lambda::Function", named("FunctionName", s.cfg.Settings.Prefix+"-"+fn))
	return props["Environment"].(map[string]any)["Variables"].(map[string]any)
}

// loadEnv runs a function's environment through the config.Load the
// Lambdas call at start.
func loadEnv(t *testing.T, fn string, env map[string]any) config.Config {
	t.Helper()
	loaded, err := config.Load(func(k string) string {
		switch v := env[k].(type) {
		case string:
			return v
		case nil:
			return ""
		default: // a reference to a resource, resolved at deploy
			return "resolved-at-deploy"
		}
	})
	if err != nil {
		t.Fatalf("%s: its environment does not load: %v", fn, err)
	}
	return loaded
}

func TestEventSourceMapping(t *testing.T) {
	check := func(t *testing.T, s *synthesized, size, window, concurrency float64) {
		t.Helper()
		workerID, _ := s.one(t, "AWS::Lambda::Function", named("FunctionName", s.cfg.Settings.Prefix+"-worker"))
		queueID, _ := s.one(t, "AWS::SQS::Queue", named("QueueName", s.cfg.Settings.QueueName()))
		esm := mapping(t, s, "worker", queueID)
		if ref(esm["FunctionName"]) != workerID || ref(esm["EventSourceArn"]) != queueID {
			t.Errorf("mapping %v, want %s from %s", esm, workerID, queueID)
		}
		if r := strs(esm["FunctionResponseTypes"]); len(r) != 1 || r[0] != "ReportBatchItemFailures" {
			t.Errorf("FunctionResponseTypes %v", r)
		}
		scaling, _ := esm["ScalingConfig"].(map[string]any)
		if esm["BatchSize"] != size || esm["MaximumBatchingWindowInSeconds"] != window || scaling["MaximumConcurrency"] != concurrency {
			t.Errorf("batch %v window %v concurrency %v, want %v %v %v",
				esm["BatchSize"], esm["MaximumBatchingWindowInSeconds"], scaling["MaximumConcurrency"], size, window, concurrency)
		}
	}
	st := defaults(t).cfg.Settings
	check(t, defaults(t), float64(st.BatchSize), st.BatchWindow.Seconds(), float64(st.MaxConcurrency))
	// -c values arrive as strings, cdk.json values as numbers: both work.
	check(t, build(t, map[string]any{"AIJOBS_BATCH_SIZE": "3", "AIJOBS_BATCH_WINDOW": "5s", "AIJOBS_VISIBILITY_TIMEOUT": "1085s",
		"AIJOBS_MAX_CONCURRENCY": 4.0}, false), 3, 5, 4)
}

// A stack the functions would refuse at start, or that AWS would reject
// mid-deploy, does not synthesize.
func TestLoadConfigRefuses(t *testing.T) {
	dir := t.TempDir()
	for _, fn := range functionNames {
		_ = os.MkdirAll(filepath.Join(dir, fn), 0o755)
		_ = os.WriteFile(filepath.Join(dir, fn, "bootstrap"), []byte("x"), 0o755)
	}
	base := map[string]any{"apiAssetDir": filepath.Join(dir, "api"), "workerAssetDir": filepath.Join(dir, "worker"),
		"reconcilerAssetDir": filepath.Join(dir, "reconciler"), "notifierAssetDir": filepath.Join(dir, "notifier")}
	route := func(provider, model string) string {
		return `{"providers":{"p":` + provider + `},"routes":{"default":{"rungs":[{"provider":"p","model":"` + model + `","price":{"input":"1","output":"1"}}]}}}`
	}
	var many strings.Builder // 60 routes: valid, but too big for a Lambda environment
	many.WriteString(`{"providers":{"fake":{"kind":"fake"}},"routes":{`)
	for i := range 60 {
		fmt.Fprintf(&many, `"route-number-%02d":{"rungs":[{"provider":"fake","price":{"input":"1","output":"1"}}]},`, i)
	}
	many.WriteString(`"default":{"rungs":[{"provider":"fake","price":{"input":"1","output":"1"}}]}}}`)
	for _, tc := range []struct {
		name string
		ctx  map[string]any
		want string
	}{
		{"visibility below worker timeout", map[string]any{"AIJOBS_VISIBILITY_TIMEOUT": "100s"}, "visibility timeout"},
		{"receive count too low", map[string]any{"AIJOBS_MAX_RECEIVE_COUNT": "8"}, "max receive count"},
		{"fractional timeout", map[string]any{"AIJOBS_WORKER_TIMEOUT": "180500ms", "AIJOBS_VISIBILITY_TIMEOUT": "1200s"}, "whole seconds"},
		{"visibility not six worker timeouts", map[string]any{"AIJOBS_VISIBILITY_TIMEOUT": "1000s"}, "6 x worker timeout"},
		{"reservation below the mapping's concurrency", map[string]any{"workerReservedConcurrency": "5"}, "reserved concurrency 5 < maximum concurrency 10"},
		{"secret in context", map[string]any{"OPENAI_API_KEY": "sk-test"}, "OPENAI_API_KEY"},
		{"table name in context", map[string]any{"AIJOBS_TABLE": "other"}, "AIJOBS_TABLE"},
		{"park bucket in context", map[string]any{"AIJOBS_PARK_BUCKET": "other"}, "AIJOBS_PARK_BUCKET"},
		{"half a JWT config", map[string]any{"jwtIssuer": "https://issuer.example.com/"}, "jwtAudience"},
		{"bad retention", map[string]any{"logRetentionDays": "31"}, "logRetentionDays"},
		{"bad throwaway", map[string]any{"throwaway": "yes please"}, "throwaway"},
		{"zero alarm threshold", map[string]any{"spendAlarmCentsPerHour": "0"}, "spendAlarmCentsPerHour"},
		{"prefix AWS cannot name", map[string]any{"AIJOBS_PREFIX": "ai jobs"}, "prefix"},
		{"missing binaries", map[string]any{"apiAssetDir": filepath.Join(dir, "nothing")}, "make lambdas"},
		{"missing reconciler", map[string]any{"reconcilerAssetDir": filepath.Join(dir, "nothing")}, "reconcilerAssetDir"},
		{"reconcile in seconds", map[string]any{"AIJOBS_RECONCILE_EVERY": "90s"}, "whole minutes"},
		{"reconciler too short", map[string]any{"reconcilerTimeout": "5s"}, "reconciler timeout"},
		// HTTP API integrations time out at 30 s: the function must be
		// done (or dead) first, or API Gateway answers on its own.
		{"API timeout at the integration limit", map[string]any{"apiTimeout": "30s"}, "API timeout 30s"},
		{"reconciler memory", map[string]any{"reconcilerMemoryMB": "64"}, "reconciler memory"},
		{"notifier memory", map[string]any{"notifierMemoryMB": "64"}, "notifier memory"},
		{"notifier timeout in milliseconds", map[string]any{"AIJOBS_NOTIFIER_TIMEOUT": "60500ms"}, "notifier timeout"},
		{"missing notifier", map[string]any{"notifierAssetDir": filepath.Join(dir, "nothing")}, "notifierAssetDir"},
		// ValidateDeployment's callback rules: the dev server's loopback
		// receivers never in AWS; retries over at least a day.
		{"loopback callbacks", map[string]any{"AIJOBS_CALLBACK_ALLOW_LOOPBACK": "true"}, "loopback"},
		{"callback retries under a day", map[string]any{"AIJOBS_CALLBACK_ATTEMPTS": "5"}, "under a day"},
		{"notifier timeout below the callback's", map[string]any{"AIJOBS_NOTIFIER_TIMEOUT": "12s"}, "notifier timeout"},
		{"callbacks off", map[string]any{"AIJOBS_CALLBACKS": "false"}, "AIJOBS_CALLBACKS=false"},
		{"callback queue in context", map[string]any{"AIJOBS_CALLBACK_QUEUE_URL": "https://sqs/x"}, "AIJOBS_CALLBACK_QUEUE_URL"},
		{"signing secret in context", map[string]any{"AIJOBS_WEBHOOK_SECRET_ID": "other"}, "AIJOBS_WEBHOOK_SECRET_ID"},
		{"routes twice", map[string]any{"routesFile": "routes.json", "AIJOBS_ROUTES": route(`{"kind":"fake"}`, "m")}, "both set"},
		{"missing routes file", map[string]any{"routesFile": filepath.Join(dir, "nothing.json")}, "routesFile"},
		{"routes not JSON", map[string]any{"AIJOBS_ROUTES": "{"}, "compact routes"},
		{"bad routes document", map[string]any{"AIJOBS_ROUTES": `{"providers":{},"routes":{"default":{"rungs":[]}}}`}, "no rungs"},
		{"key from the environment", map[string]any{"AIJOBS_ROUTES": route(`{"kind":"openai","base_url":"https://api.openai.com/v1","api_key_env":"OPENAI_API_KEY"}`, "gpt-4o")},
			"api_key_secret"},
		// relative to the repository root; the example has an api_key_env
		{"example routes file", map[string]any{"routesFile": "pkg/config/testdata/routes.json"}, `"openai" (api_key_env OPENAI_API_KEY)`},
		{"environment too big", map[string]any{"AIJOBS_ROUTES": many.String()}, "4096-byte limit"},
		{"application inference profile", map[string]any{"AIJOBS_ROUTES": route(`{"kind":"bedrock"}`,
			"arn:aws:bedrock:us-east-1:123456789012:application-inference-profile/a1b2c3")}, "application inference profile"},
		{"secret not an ARN of a secret", map[string]any{"AIJOBS_ROUTES": route(`{"kind":"anthropic","api_key_secret":"arn:aws:ssm:us-east-1:123456789012:parameter/k"}`,
			"claude-haiku-4-5")}, "not a Secrets Manager secret ARN"},
		{"skip the failure index", map[string]any{"skipIndexes": "failures"}, "skipIndexes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := map[string]any{}
			for k, v := range base {
				ctx[k] = v
			}
			for k, v := range tc.ctx {
				ctx[k] = v
			}
			_, err := LoadConfig(mapLookup(ctx))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("LoadConfig = %v, want an error about %q", err, tc.want)
			}
		})
	}
	if _, err := LoadConfig(mapLookup(base)); err != nil {
		t.Fatalf("defaults refused: %v", err)
	}
	base["apiTimeout"] = "29s"
	if _, err := LoadConfig(mapLookup(base)); err != nil {
		t.Fatalf("an API timeout of 29s refused: %v", err)
	}
}

// The reconciler runs on an EventBridge schedule every ReconcileEvery,
// with the same environment as the worker.
func TestReconcilerSchedule(t *testing.T) {
	for name, tc := range map[string]struct {
		overrides map[string]any
		rate      string
		age       float64
	}{
		"defaults": {nil, "rate(5 minutes)", 300},
		"1m":       {map[string]any{"AIJOBS_RECONCILE_EVERY": "1m"}, "rate(1 minute)", 60},
		"2h":       {map[string]any{"AIJOBS_RECONCILE_EVERY": "2h", "AIJOBS_RECONCILE_AFTER": "3h"}, "rate(2 hours)", 7200},
	} {
		t.Run(name, func(t *testing.T) {
			s := defaults(t)
			if tc.overrides != nil {
				s = build(t, tc.overrides, false)
			}
			st := s.cfg.Settings
			fnID, fn := s.one(t, "AWS::Lambda::Function", named("FunctionName", st.Prefix+"-reconciler"))
			checkSchedule(t, s, "reconcile", fnID, tc.rate, tc.age)
			_, invokeConfig := s.one(t, "AWS::Lambda::EventInvokeConfig", nil)
			if ref(invokeConfig["FunctionName"]) != fnID || invokeConfig["MaximumRetryAttempts"] != 0.0 {
				t.Errorf("invoke config %v, want no async retries (the schedule is the retry)", invokeConfig)
			}
			// The worker's environment (the buckets table for the spend
			// balances a dead attempt's recovery reads).
			workerEnv := maps.Clone(functionEnv(t, s, "worker"))
			if env := fn["Environment"].(map[string]any)["Variables"]; !reflect.DeepEqual(env, workerEnv) {
				t.Errorf("reconciler environment %v, want the worker's %v", env, workerEnv)
			}
		})
	}
	s := build(t, map[string]any{"reconcilerMemoryMB": "512", "reconcilerTimeout": "90s"}, false)
	_, fn := s.one(t, "AWS::Lambda::Function", named("FunctionName", s.cfg.Settings.Prefix+"-reconciler"))
	if fn["MemorySize"] != 512.0 || fn["Timeout"] != 90.0 {
		t.Errorf("reconciler memory %v timeout %v, want 512 / 90 from the context", fn["MemorySize"], fn["Timeout"])
	}
}

// checkSchedule checks the rule <prefix>-<name>: enabled, at rate, its
// one target the function fnID, retried twice but never delivered more
// than age seconds late (newSchedule), and EventBridge allowed to invoke
// that function.
func checkSchedule(t *testing.T, s *synthesized, name, fnID, rate string, age float64) {
	t.Helper()
	_, rule := s.one(t, "AWS::Events::Rule", named("Name", s.cfg.Settings.Prefix+"-"+name))
	if rule["ScheduleExpression"] != rate || rule["State"] != "ENABLED" {
		t.Errorf("rule %s %v, want %s", name, rule, rate)
	}
	targets, _ := rule["Targets"].([]any)
	if len(targets) != 1 {
		t.Fatalf("rule %s targets %v", name, targets)
	}
	target := targets[0].(map[string]any)
	retry, _ := target["RetryPolicy"].(map[string]any)
	if ref(target["Arn"]) != fnID || retry["MaximumEventAgeInSeconds"] != age || retry["MaximumRetryAttempts"] != 2.0 {
		t.Errorf("rule %s target %v, want %s, at most %v s old", name, target, fnID, age)
	}
	_, perm := s.one(t, "AWS::Lambda::Permission", func(p map[string]any) bool {
		return p["Principal"] == "events.amazonaws.com" && ref(p["FunctionName"]) == fnID
	})
	if perm["Action"] != "lambda:InvokeFunction" || ref(perm["SourceArn"]) == "" {
		t.Errorf("permission %v, want EventBridge invoking %s from the rule", perm, fnID)
	}
}

// The size check counts every variable a function gets: the stack adds
// at most the ten its estimate covers (the notifier gets the first nine,
// the API the first five and the signing secret and tenants table, the
// worker and the reconciler the first five and the rate-limit buckets
// table).
func TestEnvironmentSizeEstimate(t *testing.T) {
	s := defaults(t)
	st := s.cfg.Settings
	covered := []string{"AIJOBS_TABLE", "AIJOBS_QUEUE_URL", "AIJOBS_DLQ_URL", "AIJOBS_PARK_BUCKET", "AIJOBS_QUARANTINE_TABLE",
		"AIJOBS_PAYLOAD_BUCKET", "AIJOBS_CALLBACK_QUEUE_URL", "AIJOBS_CALLBACK_DLQ_URL", "AIJOBS_WEBHOOK_SECRET_ID", "AIJOBS_TENANTS_TABLE", "AIJOBS_BUCKETS_TABLE"}
	for _, fn := range functionNames {
		var added []string
		for k := range functionEnv(t, s, fn) {
			if _, ok := s.cfg.Env[k]; !ok {
				added = append(added, k)
			}
		}
		want := covered[:6]
		switch fn {
		case "notifier":
			want = covered[:10]
		case "api":
			want = append(slices.Clone(covered[:6]), covered[8], covered[9], covered[10])
		case "worker", "reconciler":
			want = append(slices.Clone(covered[:6]), covered[10])
		}
		if !equalSets(added, want) {
			t.Errorf("the stack adds %v to %s's environment, want %v (stackEnvSize covers %v)", added, fn, want, covered)
		}
	}
	url := func(name string) int { return len("https://sqs.ap-southeast-5.amazonaws.com/123456789012/" + name) }
	arn := len("arn:aws:secretsmanager:ap-southeast-5:123456789012:secret:" + st.WebhookSecretName() + "-AbCdEf")
	// CloudFormation names a bucket <stack>-<logical id>-<random>, cut to
	// fit; 63 characters is as long as any bucket name can be.
	bucket := 63
	real := url(st.QueueName()) + url(st.DLQName()) + url(st.CallbackQueueName()) + url(st.CallbackDLQName()) + arn + len(st.TableName()) +
		2*bucket + len(st.TenantsTableName()) + len(st.QuarantineTableName()) + len(st.BucketsTableName()) + len(strings.Join(covered, ""))
	if n := stackEnvSize(st); n < real {
		t.Errorf("stackEnvSize %d is below a real environment's %d", n, real)
	}
}
