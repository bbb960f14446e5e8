package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
	"github.com/aws/constructs-go/constructs/v10"

	"github.com/aijobs/aijobs/pkg/config"
	"github.com/aijobs/aijobs/pkg/job"
	"github.com/aijobs/aijobs/pkg/settings"
)

// Config is everything the stack is built from: the settings the functions
// also run with, plus the knobs that only exist in AWS (authorizer, alarm
// thresholds, throttling, log retention). The builders read nothing else
// (never the context itself), so everything they build from has been
// through LoadConfig's checks.
type Config struct {
	Settings settings.Settings
	// Env is the environment every function gets, apart from the resource
	// names and URLs the stack fills in. It holds the same strings the
	// settings were parsed from, so the deployed functions run with exactly
	// the synthesized numbers (a test feeds it back through config.Load).
	Env map[string]string

	// RoutesJSON is AIJOBS_ROUTES as the functions get it (compacted JSON),
	// or empty for the single-provider shortcut. Env holds it too; it is
	// kept on its own so checkEnvSize can say how much of Lambda's 4 KB the
	// routes take.
	// Providers and Routes are what config.Load made of it: the worker's
	// model grants come from them.
	RoutesJSON string
	Providers  map[string]config.ProviderSpec
	Routes     map[string]job.Route

	StackName string
	// Throwaway relaxes the data's protection (DESTROY, no deletion
	// protection) for test stacks such as LocalStack.
	Throwaway bool

	JWTIssuer   string
	JWTAudience []string

	AlarmEmail        string
	SpendCentsPerHour float64
	FailedJobsPer5Min float64
	API5xxPer5Min     float64
	// InFlightShare is the share of SQS's in-flight quota at which the
	// InFlightNearQuota alarm fires (0 < share <= 1).
	InFlightShare float64

	ThrottleRate  float64
	ThrottleBurst float64
	LogRetention  awslogs.RetentionDays
	LogDays       int

	APIAssetDir        string
	WorkerAssetDir     string
	ReconcilerAssetDir string
	NotifierAssetDir   string
	// CollectorAssetDir is needed only when a route offers a batch lane:
	// the collector is deployed only then.
	CollectorAssetDir string

	// SkipIndexes are new table indexes left out of this deploy: DynamoDB
	// adds one global secondary index per table update (docs/deploy.md).
	SkipIndexes []string
}

// Lookup returns a context value as a string, and whether it was set. It
// is a function rather than the CDK node so the tests can run LoadConfig
// over a plain map.
type Lookup func(key string) (string, bool)

// ContextLookup reads the CDK context: cdk.json, cdk.context.json and -c.
// Values from -c are strings, values from cdk.json keep their JSON type;
// every one comes back as a string (an object or a list, such as
// AIJOBS_ROUTES written as JSON in cdk.json, as its JSON text), so
// LoadConfig parses a value the same way wherever it was given.
func ContextLookup(node constructs.Node) Lookup {
	return func(key string) (string, bool) {
		switch v := node.TryGetContext(&key).(type) {
		case nil:
			return "", false
		case string:
			return v, v != ""
		case bool:
			return strconv.FormatBool(v), true
		case float64:
			return strconv.FormatFloat(v, 'f', -1, 64), true
		case map[string]any, []any:
			b, err := json.Marshal(v)
			if err != nil {
				return fmt.Sprint(v), true
			}
			return string(b), true
		default:
			return fmt.Sprint(v), true
		}
	}
}

// notFromContext are the variables the stack never copies from the context
// into the functions' environment: Lambda sets the region, the endpoint is
// real AWS, the stack sets the resource names (the callback queues, the
// signing secret, the parking bucket and the tables it creates included,
// the buckets table among them, and a Bedrock batch
// lane's bucket and service role: newBedrockBatch), the listen address is
// the dev server's, and a secret never goes into a template.
var notFromContext = map[string]bool{
	"AWS_REGION": true, "AWS_ENDPOINT_URL": true, "AIJOBS_LISTEN": true,
	"AIJOBS_TABLE": true, "AIJOBS_QUEUE_URL": true, "AIJOBS_DLQ_URL": true, "AIJOBS_PARK_BUCKET": true,
	"AIJOBS_BATCH_BUCKET": true, "AIJOBS_BATCH_ROLE_ARN": true,
	"AIJOBS_CALLBACK_QUEUE_URL": true, "AIJOBS_CALLBACK_DLQ_URL": true, "AIJOBS_WEBHOOK_SECRET_ID": true,
	"AIJOBS_TENANTS_TABLE": true, "AIJOBS_QUARANTINE_TABLE": true, "AIJOBS_BUCKETS_TABLE": true,
	"OPENAI_API_KEY": true,
}

// LoadConfig builds the stack's Config from the context. Every variable of
// pkg/config can be given under its own name (-c AIJOBS_BATCH_SIZE=3); the
// model routes can also come from a file (-c routesFile=routes.json). The
// result is checked by the same config.Load and settings.Validate the
// functions run at start, so a stack the functions would refuse never
// synthesizes. Every problem after config.Load is collected, not just the
// first, so one synth reports them all.
func LoadConfig(ctx Lookup) (Config, error) {
	if err := refuseStackSetVars(ctx); err != nil {
		return Config{}, err
	}
	routes, err := loadRoutes(ctx)
	if err != nil {
		return Config{}, err
	}
	getenv := func(name string) string {
		switch name {
		case routesVar:
			return routes
		case "AIJOBS_BATCH_ROLE_ARN":
			// config.Load wants it named when a bedrock rung offers a
			// batch lane; the stack makes that role (newBedrockBatch)
			// and gives the functions its ARN, which synth cannot know.
			return stackMadeRole
		}
		v, _ := ctx(name)
		return v
	}
	loaded, err := config.Load(getenv)
	if err != nil {
		return Config{}, err
	}
	c := Config{Settings: loaded.Settings, Env: contextEnv(ctx, routes), RoutesJSON: routes, Providers: loaded.Providers, Routes: loaded.Routes}
	var errs []string
	// The stack always deploys the notifier, which refuses to start
	// without callbacks: a deployment without them is not one this stack
	// makes (docs/deploy.md, Callbacks).
	if !loaded.Callbacks {
		errs = append(errs, "AIJOBS_CALLBACKS=false: the stack always deploys the notifier and its event sources; deploy with callbacks on")
	}
	c.StackName = str(ctx, "stackName", "AijobsStack")
	c.Throwaway = boolean(ctx, "throwaway", false, &errs)
	c.loadJWT(ctx, &errs)
	c.loadAlarmsAndThrottling(ctx, &errs)
	c.loadLogRetention(ctx, &errs)
	loadFunctionSizing(ctx, &c.Settings, &errs)
	errs = append(errs, checkAWSLimits(c.Settings)...)
	// Validate again (the context may have changed the reconciler's timeout
	// or the worker's reservation), with the rules only AWS needs.
	if err := c.Settings.ValidateDeployment(); err != nil {
		errs = append(errs, err.Error())
	}
	errs = append(errs, checkEnvSize(c)...)
	errs = append(errs, checkModelAccess(c)...)
	errs = append(errs, checkCollector(c)...)
	errs = append(errs, checkBedrockBatch(c)...)
	c.loadSkipIndexes(ctx, &errs)
	c.loadAssetDirs(ctx, &errs)
	if len(errs) > 0 {
		return Config{}, fmt.Errorf("infra: %s", strings.Join(errs, "; "))
	}
	return c, nil
}

// stackMadeRole stands for the ARN of a role the stack makes, in what
// LoadConfig hands config.Load; it never reaches a function.
const stackMadeRole = "arn:aws:iam::000000000000:role/made-by-the-stack"

// refuseStackSetVars fails on any notFromContext variable in the context:
// silently ignoring one would deploy something other than what was asked.
func refuseStackSetVars(ctx Lookup) error {
	for name := range notFromContext {
		if _, set := ctx(name); set {
			return fmt.Errorf("context %s: not settable here (the stack sets it, or it is a secret)", name)
		}
	}
	return nil
}

// contextEnv is Config.Env: every pkg/config variable but notFromContext,
// as the context gives it or at its default, and AIJOBS_ROUTES as
// loadRoutes compacted it. Defaults are written out too: the functions then
// run with exactly the numbers this synth checked, whatever defaults their
// own build has.
func contextEnv(ctx Lookup, routes string) map[string]string {
	env := map[string]string{}
	for _, v := range config.Vars() {
		if notFromContext[v.Name] {
			continue
		}
		val, set := ctx(v.Name)
		if !set {
			val = v.Default
		}
		if v.Name == routesVar {
			val = routes
		}
		if val != "" {
			env[v.Name] = val
		}
	}
	return env
}

// loadJWT reads the JWT authorizer's issuer and audiences, refusing one
// without the other, so a half-given authorizer fails the synth instead of
// deploying something else (an audience alone would leave the API on the
// IAM authorizer).
func (c *Config) loadJWT(ctx Lookup, errs *[]string) {
	c.JWTIssuer = str(ctx, "jwtIssuer", "")
	if aud := str(ctx, "jwtAudience", ""); aud != "" {
		for _, a := range strings.Split(aud, ",") {
			if a = strings.TrimSpace(a); a != "" {
				c.JWTAudience = append(c.JWTAudience, a)
			}
		}
	}
	if (c.JWTIssuer == "") != (len(c.JWTAudience) == 0) {
		*errs = append(*errs, "jwtIssuer and jwtAudience go together")
	}
	if c.JWTIssuer != "" && !strings.HasPrefix(c.JWTIssuer, "https://") {
		*errs = append(*errs, "jwtIssuer must be an https URL")
	}
}

// loadAlarmsAndThrottling reads the alarm e-mail, the alarms' thresholds
// and the API stage's throttling, all above 0: an alarm at 0 never
// recovers, a stage at 0 refuses everything.
func (c *Config) loadAlarmsAndThrottling(ctx Lookup, errs *[]string) {
	c.AlarmEmail = str(ctx, "alarmEmail", "")
	c.SpendCentsPerHour = number(ctx, "spendAlarmCentsPerHour", 500, errs)
	c.FailedJobsPer5Min = number(ctx, "failedJobsPer5Min", 5, errs)
	c.API5xxPer5Min = number(ctx, "api5xxPer5Min", 5, errs)
	c.ThrottleRate = number(ctx, "apiThrottleRate", 50, errs)
	c.ThrottleBurst = number(ctx, "apiThrottleBurst", 100, errs)
	c.InFlightShare = number(ctx, "inFlightAlarmShare", 0.8, errs)
	if !(c.InFlightShare > 0 && c.InFlightShare <= 1) {
		*errs = append(*errs, fmt.Sprintf("inFlightAlarmShare %v: want a share of the in-flight quota above 0 and at most 1", c.InFlightShare))
	}
	for name, v := range map[string]float64{"spendAlarmCentsPerHour": c.SpendCentsPerHour, "failedJobsPer5Min": c.FailedJobsPer5Min,
		"api5xxPer5Min": c.API5xxPer5Min, "apiThrottleRate": c.ThrottleRate, "apiThrottleBurst": c.ThrottleBurst} {
		if v <= 0 {
			*errs = append(*errs, fmt.Sprintf("%s must be above 0 (an alarm at 0 never recovers, a stage at 0 refuses everything)", name))
		}
	}
}

// loadLogRetention reads the log groups' retention in days, one of the
// values CloudWatch Logs accepts (retentionDays): another would fail only
// mid-deploy.
func (c *Config) loadLogRetention(ctx Lookup, errs *[]string) {
	c.LogDays = int(number(ctx, "logRetentionDays", 30, errs))
	var ok bool
	if c.LogRetention, ok = retentionDays[c.LogDays]; !ok {
		*errs = append(*errs, fmt.Sprintf("logRetentionDays %d: want one of 1, 3, 5, 7, 14, 30, 60, 90, 180, 365", c.LogDays))
	}
}

// loadFunctionSizing applies the context's function sizes to s: memory,
// the worker's reserved concurrency, and the API's, the reconciler's and
// the collector's timeouts. They are AWS-only knobs, so they live in the
// context rather than in pkg/config, but they change the settings the
// timing rules are checked on, so they go into s before the checks.
func loadFunctionSizing(ctx Lookup, s *settings.Settings, errs *[]string) {
	s.APIMemoryMB = int(number(ctx, "apiMemoryMB", float64(s.APIMemoryMB), errs))
	s.WorkerMemoryMB = int(number(ctx, "workerMemoryMB", float64(s.WorkerMemoryMB), errs))
	s.ReconcilerMemoryMB = int(number(ctx, "reconcilerMemoryMB", float64(s.ReconcilerMemoryMB), errs))
	s.NotifierMemoryMB = int(number(ctx, "notifierMemoryMB", float64(s.NotifierMemoryMB), errs))
	s.CollectorMemoryMB = int(number(ctx, "collectorMemoryMB", float64(s.CollectorMemoryMB), errs))
	s.WorkerReservedConcurrency = int(number(ctx, "workerReservedConcurrency", float64(s.WorkerReservedConcurrency), errs))
	for key, d := range map[string]*time.Duration{"apiTimeout": &s.APITimeout, "reconcilerTimeout": &s.ReconcilerTimeout,
		"collectorTimeout": &s.CollectorTimeout} {
		if v, set := ctx(key); set {
			var err error
			if *d, err = time.ParseDuration(v); err != nil {
				*errs = append(*errs, fmt.Sprintf("%s %q: want a duration like 10s", key, v))
			}
		}
	}
}

// loadSkipIndexes reads skipIndexes, refusing any name but
// skippableIndexes: a misspelt one would otherwise be ignored, and the
// deploy would try to add every index at once, which DynamoDB refuses.
func (c *Config) loadSkipIndexes(ctx Lookup, errs *[]string) {
	v := str(ctx, "skipIndexes", "")
	if v == "" {
		return
	}
	for _, name := range strings.Split(v, ",") {
		name = strings.TrimSpace(name)
		if !slices.Contains(skippableIndexes(*c), name) {
			*errs = append(*errs, fmt.Sprintf("skipIndexes %q: only %s can be left out of a deploy", name, strings.Join(skippableIndexes(*c), " or ")))
			continue
		}
		c.SkipIndexes = append(c.SkipIndexes, name)
	}
}

// loadAssetDirs reads where the functions' bootstrap binaries are (dist/
// by default, where `make lambdas` writes them) and checks they are
// there, so a missing build fails the synth and not the deploy.
func (c *Config) loadAssetDirs(ctx Lookup, errs *[]string) {
	root := repoRoot()
	c.APIAssetDir = str(ctx, "apiAssetDir", filepath.Join(root, "dist", "api"))
	c.WorkerAssetDir = str(ctx, "workerAssetDir", filepath.Join(root, "dist", "worker"))
	c.ReconcilerAssetDir = str(ctx, "reconcilerAssetDir", filepath.Join(root, "dist", "reconciler"))
	c.NotifierAssetDir = str(ctx, "notifierAssetDir", filepath.Join(root, "dist", "notifier"))
	c.CollectorAssetDir = str(ctx, "collectorAssetDir", filepath.Join(root, "dist", "collector"))
	dirs := []string{c.APIAssetDir, c.WorkerAssetDir, c.ReconcilerAssetDir, c.NotifierAssetDir}
	if job.AnyBatchLane(c.Routes) {
		dirs = append(dirs, c.CollectorAssetDir)
	}
	for _, dir := range dirs {
		if _, err := os.Stat(filepath.Join(dir, "bootstrap")); err != nil {
			*errs = append(*errs, fmt.Sprintf("%s/bootstrap is missing: run `make lambdas` first "+
				"(or point -c apiAssetDir/workerAssetDir/reconcilerAssetDir/notifierAssetDir/collectorAssetDir elsewhere)", dir))
		}
	}
}

// checkAWSLimits refuses what settings.Validate cannot know: the units and
// ranges AWS accepts. CloudFormation would reject these only mid-deploy.
func checkAWSLimits(s settings.Settings) []string {
	var errs []string
	// The prefix names the table, the queues, the functions and the alarms.
	if !validPrefix.MatchString(s.Prefix) {
		errs = append(errs, fmt.Sprintf("prefix %q: want 1..40 letters, digits, '-' or '_'", s.Prefix))
	}
	whole := func(name string, d, lo, hi time.Duration) {
		if d%time.Second != 0 || d < lo || d > hi {
			errs = append(errs, fmt.Sprintf("%s %s: want whole seconds in %s..%s", name, d, lo, hi))
		}
	}
	whole("worker timeout", s.WorkerTimeout, time.Second, 15*time.Minute)
	whole("reconciler timeout", s.ReconcilerTimeout, time.Second, 15*time.Minute)
	whole("collector timeout", s.CollectorTimeout, time.Second, 15*time.Minute)
	// Six of them are the callback queue's visibility timeout, at most 12 h.
	whole("notifier timeout", s.NotifierTimeout, time.Second, 15*time.Minute)
	// An HTTP API integration times out after 30 s at most (API Gateway
	// quotas): a function allowed the whole 30 s would be cut off by API
	// Gateway, which then answers 503 itself; at 29 s the function's own
	// deadline comes first.
	whole("API timeout", s.APITimeout, time.Second, 29*time.Second)
	whole("visibility timeout", s.VisibilityTimeout, 0, 12*time.Hour)
	whole("batching window", s.BatchWindow, 0, 5*time.Minute)
	whole("queue retention", s.QueueRetention, time.Minute, 14*24*time.Hour)
	whole("DLQ retention", s.DLQRetention, time.Minute, 14*24*time.Hour)
	// An EventBridge schedule is rate(<n> minutes): whole minutes, at least one.
	if s.ReconcileEvery%time.Minute != 0 || s.ReconcileEvery < time.Minute {
		errs = append(errs, fmt.Sprintf("reconcile every %s: an EventBridge rate schedule wants whole minutes, at least 1m", s.ReconcileEvery))
	}
	for name, mb := range map[string]int{"API memory": s.APIMemoryMB, "worker memory": s.WorkerMemoryMB, "reconciler memory": s.ReconcilerMemoryMB,
		"notifier memory": s.NotifierMemoryMB, "collector memory": s.CollectorMemoryMB} {
		if mb < 128 || mb > 10240 {
			errs = append(errs, fmt.Sprintf("%s %d MB outside 128..10240", name, mb))
		}
	}
	if s.MaxConcurrency > 1000 {
		errs = append(errs, fmt.Sprintf("maximum concurrency %d above 1000", s.MaxConcurrency))
	}
	return errs
}

// validPrefix is the prefix's form: it starts the names of the table, the
// queues, the functions and the alarms, and letters, digits, '-' and '_'
// are the characters all of those names accept.
var validPrefix = regexp.MustCompile(`^[A-Za-z0-9_-]{1,40}$`)

// retentionDays are the retentions CloudWatch Logs accepts, by their number
// of days: the CDK takes the enum, and any other number would fail only
// mid-deploy.
var retentionDays = map[int]awslogs.RetentionDays{
	1: awslogs.RetentionDays_ONE_DAY, 3: awslogs.RetentionDays_THREE_DAYS, 5: awslogs.RetentionDays_FIVE_DAYS,
	7: awslogs.RetentionDays_ONE_WEEK, 14: awslogs.RetentionDays_TWO_WEEKS, 30: awslogs.RetentionDays_ONE_MONTH,
	60: awslogs.RetentionDays_TWO_MONTHS, 90: awslogs.RetentionDays_THREE_MONTHS, 180: awslogs.RetentionDays_SIX_MONTHS,
	365: awslogs.RetentionDays_ONE_YEAR,
}

// repoRoot is the directory holding cdk.json: the CLI runs the app with
// `go run -C infra .` and tests run in infra/, so it is found upwards.
func repoRoot() string {
	dir, err := os.Getwd()
	if err != nil {
		return ".."
	}
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "cdk.json")); err == nil {
			return d
		}
		if filepath.Dir(d) == d {
			return filepath.Dir(dir)
		}
	}
}

// str is the context value of key, or def when it is not set.
func str(ctx Lookup, key, def string) string {
	if v, ok := ctx(key); ok {
		return v
	}
	return def
}

// boolean is the context value of key as a bool, or def when it is not set.
// A bad value goes into errs rather than ending LoadConfig, so one synth
// reports every bad value.
func boolean(ctx Lookup, key string, def bool, errs *[]string) bool {
	v, ok := ctx(key)
	if !ok {
		return def
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		*errs = append(*errs, fmt.Sprintf("%s %q: want true or false", key, v))
	}
	return b
}

// number is the context value of key as a non-negative number, or def when
// it is not set; a bad value goes into errs, as for boolean. No knob here
// has a meaning below 0.
func number(ctx Lookup, key string, def float64, errs *[]string) float64 {
	v, ok := ctx(key)
	if !ok {
		return def
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || f < 0 {
		*errs = append(*errs, fmt.Sprintf("%s %q: want a non-negative number", key, v))
	}
	return f
}
