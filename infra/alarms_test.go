package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/aijobs/aijobs/pkg/emf"
	"github.com/aijobs/aijobs/pkg/job"
)

func alarm(t *testing.T, s *synthesized, id string) map[string]any {
	t.Helper()
	_, a := s.one(t, "AWS::CloudWatch::Alarm", named("AlarmName", s.cfg.Settings.Prefix+"-"+id))
	return a
}

// queries returns an alarm's metric math: the expression and, by id, the
// metrics it uses.
func queries(t *testing.T, a map[string]any) (string, map[string]map[string]any) {
	t.Helper()
	var expr string
	metrics := map[string]map[string]any{}
	for _, q := range a["Metrics"].([]any) {
		m := q.(map[string]any)
		if e, ok := m["Expression"].(string); ok {
			expr = e
			continue
		}
		metrics[m["Id"].(string)] = m["MetricStat"].(map[string]any)
	}
	return expr, metrics
}

// single is the one metric an alarm watches, whether CloudFormation has it
// as top-level properties or (with a label) as a one-query Metrics list.
func single(t *testing.T, a map[string]any) (namespace, name, stat string, period float64) {
	t.Helper()
	if a["MetricName"] != nil {
		return a["Namespace"].(string), a["MetricName"].(string), a["Statistic"].(string), a["Period"].(float64)
	}
	qs, _ := a["Metrics"].([]any)
	if len(qs) != 1 {
		t.Fatalf("alarm %v watches %d queries, want one metric", a["AlarmName"], len(qs))
	}
	ms := qs[0].(map[string]any)["MetricStat"].(map[string]any)
	m := ms["Metric"].(map[string]any)
	return m["Namespace"].(string), m["MetricName"].(string), ms["Stat"].(string), ms["Period"].(float64)
}

func metricName(ms map[string]any) string {
	return ms["Metric"].(map[string]any)["MetricName"].(string)
}

// The DLQ alarms' shape; what they do is TestDLQArrivalAlarmSimulation's
// and TestDeadLettersWaitingSimulation's.
func TestDLQAlarms(t *testing.T) {
	s := defaults(t)
	dlqID, _ := s.one(t, "AWS::SQS::Queue", named("QueueName", s.cfg.Settings.DLQName()))
	check := func(alarmID, expression string, want map[string][4]any) map[string]any {
		a := alarm(t, s, alarmID)
		expr, metrics := queries(t, a)
		if expr != expression {
			t.Errorf("%s: expression %q, want %q", alarmID, expr, expression)
		}
		if len(metrics) != len(want) {
			t.Errorf("%s: metrics %v, want %v", alarmID, sortedKeys(metrics), want)
		}
		for id, w := range want {
			m := metrics[id]
			if m == nil {
				t.Errorf("%s: no metric %q", alarmID, id)
				continue
			}
			metric := m["Metric"].(map[string]any)
			ok := metricName(m) == w[1] && m["Stat"] == w[2] && m["Period"] == w[3] && metric["Namespace"] == w[0]
			if w[0] == "AWS/SQS" {
				dims := metric["Dimensions"].([]any)[0].(map[string]any)
				ok = ok && dims["Name"] == "QueueName" && ref(dims["Value"]) == dlqID
			} else {
				ok = ok && metric["Dimensions"] == nil
			}
			if !ok {
				t.Errorf("%s: metric %s = %v, want %v (SQS ones of the DLQ)", alarmID, id, m, w)
			}
		}
		if a["TreatMissingData"] != "notBreaching" || a["ComparisonOperator"] != "GreaterThanOrEqualToThreshold" {
			t.Errorf("%s: %v", alarmID, a)
		}
		return a
	}
	arrivals := check("DlqArrivals", dlqArrivalExpression, map[string][4]any{
		"sent":   {"AWS/SQS", "NumberOfMessagesSent", "Sum", 60.0},
		"marked": {"aijobs", "DeadLetteredJobs", "Sum", 60.0},
	})
	// 1 of N one-minute periods, N covering a datapoint 15 minutes late
	if arrivals["Threshold"] != 1.0 || arrivals["DatapointsToAlarm"] != 1.0 || arrivals["EvaluationPeriods"] != float64(dlqArrivalPeriods) ||
		time.Duration(dlqArrivalPeriods)*time.Minute <= dlqMetricDelay+time.Minute {
		t.Errorf("DlqArrivals %v, want >= 1 arrival in 1 of %d periods", arrivals, dlqArrivalPeriods)
	}
	waiting := check("DeadLettersWaiting", dlqWaitingExpression, map[string][4]any{
		"visible":  {"AWS/SQS", "ApproximateNumberOfMessagesVisible", "Sum", 3600.0},
		"inFlight": {"AWS/SQS", "ApproximateNumberOfMessagesNotVisible", "Sum", 3600.0},
		"readings": {"AWS/SQS", "ApproximateNumberOfMessagesVisible", "SampleCount", 3600.0},
	})
	if waiting["Threshold"] != 0.5 || waiting["DatapointsToAlarm"] != float64(dlqWaitingHours) || waiting["EvaluationPeriods"] != float64(dlqWaitingHours) {
		t.Errorf("DeadLettersWaiting %v, want an average >= 0.5 in each of %d hours", waiting, dlqWaitingHours)
	}
	// Never on depth alone: no alarm watches a queue's depth directly.
	for id, r := range s.resources("AWS::CloudWatch::Alarm") {
		if p := r["Properties"].(map[string]any); p["MetricName"] == "ApproximateNumberOfMessagesVisible" {
			t.Errorf("alarm %s watches queue depth", id)
		}
	}
}

func TestOldestJobAlarm(t *testing.T) {
	s := defaults(t)
	a := alarm(t, s, "OldestJobAge")
	queueID, _ := s.one(t, "AWS::SQS::Queue", named("QueueName", s.cfg.Settings.QueueName()))
	dims := a["Dimensions"].([]any)[0].(map[string]any)
	if a["MetricName"] != "ApproximateAgeOfOldestMessage" || a["Namespace"] != "AWS/SQS" || ref(dims["Value"]) != queueID ||
		a["Threshold"] != s.cfg.Settings.Limits.DefaultDeadline.Seconds() || a["Statistic"] != "Maximum" {
		t.Errorf("alarm %v, want the job queue's oldest message against %v", a, s.cfg.Settings.Limits.DefaultDeadline)
	}
}

// The fair queue's alarm: the oldest job id of a tenant SQS does not count
// as noisy, on the job queue, against the default deadline like
// OldestJobAge, notifying the alarm topic, and quiet while SQS publishes
// nothing (an idle queue, no message groups yet).
func TestOldestQuietJobAlarm(t *testing.T) {
	s := defaults(t)
	a := alarm(t, s, "OldestQuietJobAge")
	queueID, _ := s.one(t, "AWS::SQS::Queue", named("QueueName", s.cfg.Settings.QueueName()))
	topicID, _ := s.one(t, "AWS::SNS::Topic", nil)
	dims := a["Dimensions"].([]any)
	dim := dims[0].(map[string]any)
	if a["MetricName"] != "ApproximateAgeOfOldestMessageInQuietGroups" || a["Namespace"] != "AWS/SQS" || len(dims) != 1 ||
		dim["Name"] != "QueueName" || ref(dim["Value"]) != queueID || a["Statistic"] != "Maximum" || a["Period"] != 300.0 {
		t.Errorf("OldestQuietJobAge %v, want the job queue's ApproximateAgeOfOldestMessageInQuietGroups, Maximum over 5 minutes", a)
	}
	old := alarm(t, s, "OldestJobAge")
	for k, want := range map[string]any{
		"Threshold":          s.cfg.Settings.Limits.DefaultDeadline.Seconds(),
		"ComparisonOperator": "GreaterThanOrEqualToThreshold",
		"EvaluationPeriods":  1.0,
		"DatapointsToAlarm":  1.0,
		"TreatMissingData":   "notBreaching",
	} {
		if a[k] != want || old[k] != want {
			t.Errorf("%s: OldestQuietJobAge %v, OldestJobAge %v, want both %v", k, a[k], old[k], want)
		}
	}
	for _, k := range []string{"AlarmActions", "OKActions"} {
		if acts, _ := a[k].([]any); len(acts) != 1 || ref(acts[0]) != topicID {
			t.Errorf("OldestQuietJobAge %s = %v, want the alarm topic", k, a[k])
		}
	}
	d, _ := a["AlarmDescription"].(string)
	for _, w := range []string{"noisy", "per-tenant in-flight limit", "Tenant fairness", s.cfg.Settings.Limits.DefaultDeadline.String()} {
		if !strings.Contains(d, w) {
			t.Errorf("OldestQuietJobAge description %q does not say %q", d, w)
		}
	}
	if len(d) > 1024 {
		t.Errorf("OldestQuietJobAge: description of %d characters, CloudWatch allows 1024", len(d))
	}
}

func TestFunctionAndAPIAlarms(t *testing.T) {
	s := defaults(t)
	worker, _ := s.one(t, "AWS::Lambda::Function", named("FunctionName", s.cfg.Settings.Prefix+"-worker"))
	api, _ := s.one(t, "AWS::ApiGatewayV2::Api", nil)
	for id, want := range map[string][3]any{
		"WorkerErrors":    {"Errors", worker, 1.0},
		"WorkerThrottles": {"Throttles", worker, 1.0},
		"Api5xx":          {"5xx", api, 5.0},
	} {
		a := alarm(t, s, id)
		dims := a["Dimensions"].([]any)[0].(map[string]any)
		if a["MetricName"] != want[0] || ref(dims["Value"]) != want[1] || a["Threshold"] != want[2] || a["Statistic"] != "Sum" || a["Period"] != 300.0 {
			t.Errorf("%s: %v, want %v", id, a, want)
		}
	}
}

func TestJobAlarms(t *testing.T) {
	s := defaults(t)
	expr, metrics := queries(t, alarm(t, s, "JobsFailedRetryable"))
	var classes []string
	for _, c := range job.Classes() {
		if c.Retryable() {
			classes = append(classes, string(c))
		}
	}
	var got []string
	for id, m := range metrics {
		dims := m["Metric"].(map[string]any)["Dimensions"].([]any)[0].(map[string]any)
		if metricName(m) != "JobsFailed" || m["Metric"].(map[string]any)["Namespace"] != "aijobs" || dims["Name"] != "ErrorClass" || m["Period"] != 300.0 {
			t.Errorf("metric %s = %v", id, m)
		}
		if !strings.Contains(expr, "FILL("+id+", 0)") {
			t.Errorf("expression %q does not use %s", expr, id)
		}
		got = append(got, dims["Value"].(string))
	}
	if !equalSets(got, classes) {
		t.Errorf("retryable failure alarm covers %v, want every retryable class %v", got, classes)
	}
	if len(metrics) > 10 {
		t.Errorf("%d metrics: an alarm may use at most 10", len(metrics))
	}
	_, refused := queries(t, alarm(t, s, "JobsRefusedByProvider"))
	got = nil
	for _, m := range refused {
		got = append(got, m["Metric"].(map[string]any)["Dimensions"].([]any)[0].(map[string]any)["Value"].(string))
	}
	if !equalSets(got, []string{"auth", "quota_exhausted"}) {
		t.Errorf("provider refusal alarm covers %v", got)
	}

	spend := alarm(t, s, "SpendPerHour")
	if ns, name, stat, period := single(t, spend); name != "CostCents" || ns != "aijobs" || period != 3600 || stat != "Sum" ||
		spend["Threshold"] != 500.0 || spend["ComparisonOperator"] != "GreaterThanThreshold" {
		t.Errorf("spend alarm %v", spend)
	}
	tuned := build(t, map[string]any{"spendAlarmCentsPerHour": "1234", "failedJobsPer5Min": 2.0}, false)
	if a := alarm(t, tuned, "SpendPerHour"); a["Threshold"] != 1234.0 {
		t.Errorf("spend threshold %v, want 1234 from the context", a["Threshold"])
	}
	if a := alarm(t, tuned, "JobsFailedRetryable"); a["Threshold"] != 2.0 {
		t.Errorf("failure threshold %v, want 2 from the context", a["Threshold"])
	}
}

func TestAlarmsNotifyEncryptedTopic(t *testing.T) {
	s := defaults(t)
	topicID, topic := s.one(t, "AWS::SNS::Topic", nil)
	keyID, key := s.one(t, "AWS::KMS::Key", nil)
	if ref(topic["KmsMasterKeyId"]) != keyID || key["EnableKeyRotation"] != true {
		t.Errorf("topic %v key %v, want a rotated customer managed key", topic, key)
	}
	policy, _ := json.Marshal(key["KeyPolicy"])
	if !strings.Contains(string(policy), `"Service":"cloudwatch.amazonaws.com"`) {
		t.Errorf("key policy does not let CloudWatch publish: %s", policy)
	}
	alarms := s.resources("AWS::CloudWatch::Alarm")
	if len(alarms) != 20 {
		t.Errorf("%d alarms, want 20: %v", len(alarms), sortedKeys(alarms))
	}
	for id, r := range alarms {
		p := r["Properties"].(map[string]any)
		for _, k := range []string{"AlarmActions", "OKActions"} {
			acts, _ := p[k].([]any)
			if len(acts) != 1 || ref(acts[0]) != topicID {
				t.Errorf("alarm %s %s = %v, want the alarm topic", id, k, p[k])
			}
		}
	}
	if n := len(s.resources("AWS::SNS::Subscription")); n != 0 {
		t.Errorf("%d subscriptions without alarmEmail", n)
	}
	mailed := build(t, map[string]any{"alarmEmail": "ops@example.com"}, false)
	_, sub := mailed.one(t, "AWS::SNS::Subscription", nil)
	if sub["Protocol"] != "email" || sub["Endpoint"] != "ops@example.com" {
		t.Errorf("subscription %v", sub)
	}
}

func TestDashboard(t *testing.T) {
	s := defaults(t)
	_, d := s.one(t, "AWS::CloudWatch::Dashboard", nil)
	body, _ := json.Marshal(d["DashboardBody"])
	for _, want := range []string{"SEARCH(", "JobsFailed", "JobsAbandoned", "CostCents", "ApproximateAgeOfOldestMessage",
		dlqArrivalExpression, "ApproximateNumberOfMessagesNotVisible", "LeasesLost", "DuplicatesAbsorbed", "PoisonMessages", "AttemptDuration", "JobsSucceeded", "5xx",
		"ReconcileCandidates", "Reconciled", "ReconcileErrors", `\"State\",\"queued\"`, `\"State\",\"running\"`, messagesLostExpression,
		oldestQuietMetric, noisyGroupsMetric} {
		if !strings.Contains(string(body), want) {
			t.Errorf("dashboard does not show %s", want)
		}
	}
}

// The fair queue's graph: the quiet tenants' oldest job id beside the
// number of noisy tenants, both the job queue's, in one widget.
func TestDashboardShowsFairness(t *testing.T) {
	s := defaults(t)
	queueID, _ := s.one(t, "AWS::SQS::Queue", named("QueueName", s.cfg.Settings.QueueName()))
	for _, w := range dashboardWidgets(t, s) {
		got := map[string]string{} // metric name -> its statistic, for the job queue's AWS/SQS metrics
		for _, row := range w.Properties.Metrics {
			if len(row) < 4 || row[0] != "AWS/SQS" || row[2] != "QueueName" {
				continue
			}
			if row[3] != "${"+queueID+".QueueName}" {
				continue
			}
			stat := ""
			if opts, ok := row[len(row)-1].(map[string]any); ok {
				stat, _ = opts["stat"].(string)
			}
			got[row[1].(string)] = stat
		}
		if got[oldestQuietMetric] == "Maximum" && got[noisyGroupsMetric] == "Maximum" {
			return
		}
	}
	t.Errorf("no widget graphs the job queue's %s and %s (Maximum) together", oldestQuietMetric, noisyGroupsMetric)
}

// The reconciler's two alarms: its function failing, and any job it had to
// re-send (a lost message), each saying what to do.
func TestReconcilerAlarms(t *testing.T) {
	s := defaults(t)
	reconciler, _ := s.one(t, "AWS::Lambda::Function", named("FunctionName", s.cfg.Settings.Prefix+"-reconciler"))
	a := alarm(t, s, "ReconcilerErrors")
	dims := a["Dimensions"].([]any)[0].(map[string]any)
	if a["MetricName"] != "Errors" || a["Namespace"] != "AWS/Lambda" || ref(dims["Value"]) != reconciler || a["Threshold"] != 1.0 ||
		a["Statistic"] != "Sum" || a["Period"] != 300.0 || a["ComparisonOperator"] != "GreaterThanOrEqualToThreshold" {
		t.Errorf("ReconcilerErrors %v, want the reconciler's Errors >= 1", a)
	}
	if d, _ := a["AlarmDescription"].(string); !strings.Contains(d, "log group") || !strings.Contains(d, "next run") {
		t.Errorf("ReconcilerErrors description %q does not say what to do", d)
	}

	lost := alarm(t, s, "MessagesLost")
	expr, metrics := queries(t, lost)
	if expr != messagesLostExpression {
		t.Errorf("expression %q", expr)
	}
	var states []string
	for id, m := range metrics {
		metric := m["Metric"].(map[string]any)
		dims := metric["Dimensions"].([]any)
		dim := dims[0].(map[string]any)
		if metricName(m) != "Reconciled" || metric["Namespace"] != "aijobs" || len(dims) != 1 || dim["Name"] != "State" ||
			dim["Value"] != id || m["Stat"] != "Sum" || m["Period"] != 300.0 {
			t.Errorf("metric %s = %v, want Reconciled{State=%s}, summed", id, m, id)
		}
		states = append(states, id)
	}
	if !equalSets(states, reconcileStates) {
		t.Errorf("MessagesLost sums states %v, want %v", states, reconcileStates)
	}
	if lost["Threshold"] != 1.0 || lost["ComparisonOperator"] != "GreaterThanOrEqualToThreshold" || lost["EvaluationPeriods"] != 1.0 ||
		lost["TreatMissingData"] != "notBreaching" {
		t.Errorf("MessagesLost %v, want >= 1 in a period", lost)
	}
	if d, _ := lost["AlarmDescription"].(string); !strings.Contains(d, "Messages are being lost") || !strings.Contains(d, "enqueue_failed") {
		t.Errorf("MessagesLost description %q does not say what to do", d)
	}
	for _, id := range []string{"ReconcilerErrors", "MessagesLost"} {
		if d, _ := alarm(t, s, id)["AlarmDescription"].(string); len(d) > 1024 {
			t.Errorf("%s: description of %d characters, CloudWatch allows 1024", id, len(d))
		}
	}
}

// The notifier's three alarms: notices given up (arrivals in the callback
// DLQ, never its depth), the function failing, and the stream read
// falling behind; each says what to do.
func TestNotifierAlarms(t *testing.T) {
	s := defaults(t)
	st := s.cfg.Settings
	notifier, _ := s.one(t, "AWS::Lambda::Function", named("FunctionName", st.Prefix+"-notifier"))
	callbackDLQ, _ := s.one(t, "AWS::SQS::Queue", named("QueueName", st.CallbackDLQName()))

	arrivals := alarm(t, s, "CallbackDlqArrivals")
	expr, metrics := queries(t, arrivals)
	sent, redriven := metrics["sent"], metrics["redriven"]
	if expr != callbackDLQArrivalExpression || len(metrics) != 2 || sent == nil || metricName(sent) != "NumberOfMessagesSent" ||
		sent["Stat"] != "Sum" || sent["Period"] != 60.0 || redriven == nil || metricName(redriven) != "CallbackNoticesRedriven" ||
		redriven["Stat"] != "Sum" || redriven["Period"] != 60.0 || redriven["Metric"].(map[string]any)["Namespace"] != emf.Namespace {
		t.Fatalf("CallbackDlqArrivals %q %v, want the callback DLQ's NumberOfMessagesSent plus the sweep's CallbackNoticesRedriven per minute",
			expr, metrics)
	}
	dims := sent["Metric"].(map[string]any)["Dimensions"].([]any)[0].(map[string]any)
	if dims["Name"] != "QueueName" || ref(dims["Value"]) != callbackDLQ {
		t.Errorf("CallbackDlqArrivals reads %v, want the callback DLQ", dims)
	}
	// Like DlqArrivals: 1 of N one-minute periods, N covering a datapoint
	// 15 minutes late (an idle queue's metrics, see TestDLQArrivalAlarmSimulation).
	if arrivals["Threshold"] != 1.0 || arrivals["DatapointsToAlarm"] != 1.0 || arrivals["EvaluationPeriods"] != float64(dlqArrivalPeriods) ||
		arrivals["TreatMissingData"] != "notBreaching" || arrivals["ComparisonOperator"] != "GreaterThanOrEqualToThreshold" {
		t.Errorf("CallbackDlqArrivals %v", arrivals)
	}

	for id, want := range map[string][3]any{
		"NotifierErrors":  {"Errors", "Sum", 1.0},
		"NoticesHeldBack": {"IteratorAge", "Maximum", float64(noticesHeldBack.Milliseconds())},
	} {
		a := alarm(t, s, id)
		d := a["Dimensions"].([]any)[0].(map[string]any)
		if a["MetricName"] != want[0] || a["Namespace"] != "AWS/Lambda" || d["Name"] != "FunctionName" || ref(d["Value"]) != notifier ||
			a["Statistic"] != want[1] || a["Threshold"] != want[2] || a["Period"] != 300.0 || a["ComparisonOperator"] != "GreaterThanOrEqualToThreshold" {
			t.Errorf("%s: %v, want the notifier's %v", id, a, want)
		}
	}
	for id, says := range map[string][]string{
		"CallbackDlqArrivals": {"callback_gave_up", "discarded", "callback_redriven", "notifier's log"},
		"NotifierErrors":      {st.WebhookSecretName(), "log group"},
		"NoticesHeldBack":     {"24 hours", "callback queue"},
	} {
		d, _ := alarm(t, s, id)["AlarmDescription"].(string)
		for _, w := range says {
			if !strings.Contains(d, w) {
				t.Errorf("%s description %q does not say %q", id, d, w)
			}
		}
		if len(d) > 1024 {
			t.Errorf("%s: description of %d characters, CloudWatch allows 1024", id, len(d))
		}
	}
}

func TestMetricID(t *testing.T) {
	for in, want := range map[string]string{"rate_limited": "rateLimited", "timeout": "timeout", "context_length_exceeded": "contextLengthExceeded"} {
		if got := metricID(in); got != want {
			t.Errorf("metricID(%q) = %q, want %q", in, got, want)
		}
	}
}

// stackEnv resolves the stack's own resources the way CloudFormation
// would in account 111122223333, us-east-1: a topic's Ref is its ARN, an
// HTTP API's Ref its id, a function's Arn its ARN.
func stackEnv(s *synthesized) map[string]string {
	env := map[string]string{}
	for id, r := range s.json["Resources"].(map[string]any) {
		switch r.(map[string]any)["Type"] {
		case "AWS::SNS::Topic":
			env[id] = "arn:aws:sns:us-east-1:111122223333:" + id
		case "AWS::ApiGatewayV2::Api":
			env[id] = "a1b2c3d4e5"
		case "AWS::Lambda::Function":
			env[id+".Arn"] = "arn:aws:lambda:us-east-1:111122223333:function:" + id
		case "AWS::KMS::Key":
			env[id+".Arn"] = "arn:aws:kms:us-east-1:111122223333:key/" + id
		}
	}
	return env
}

// CloudWatch can deliver every alarm of the stack to the alarm topic, and
// nothing else can borrow that right. A topic policy replaces SNS's
// default policy, so the topic must allow cloudwatch.amazonaws.com itself
// (AWS Knowledge Center, cloudwatch-receive-sns-for-alarm-trigger: without
// it the alarm history shows "... is not authorized to perform:
// SNS:Publish"), and a topic encrypted with a customer managed key needs
// the key to let CloudWatch generate and decrypt data keys (SNS developer
// guide, sns-key-management, "compatibility with AWS services"). Both are
// conditioned on this account and this stack's alarms (aws:SourceAccount,
// aws:SourceArn), so CloudWatch cannot be made to publish on behalf of
// someone else's alarm (the confused deputy).
func TestCloudWatchCanPublishAlarms(t *testing.T) {
	s := defaults(t)
	env := stackEnv(s)
	topicID, _ := s.one(t, "AWS::SNS::Topic", nil)
	_, policy := s.one(t, "AWS::SNS::TopicPolicy", nil)
	_, key := s.one(t, "AWS::KMS::Key", nil)
	if topics := policy["Topics"].([]any); len(topics) != 1 || ref(topics[0]) != topicID {
		t.Fatalf("topic policy applies to %v, want the alarm topic", topics)
	}
	topicArn := env[topicID]
	publish := func(alarmArn, account, tls string) (request, []request) {
		ctx := map[string]string{"aws:SourceArn": alarmArn, "aws:SourceAccount": account, "aws:SecureTransport": tls}
		return request{service: "cloudwatch.amazonaws.com", action: "sns:Publish", resource: topicArn, context: ctx},
			[]request{
				{service: "cloudwatch.amazonaws.com", action: "kms:GenerateDataKey", resource: "*", context: ctx},
				{service: "cloudwatch.amazonaws.com", action: "kms:Decrypt", resource: "*", context: ctx},
			}
	}
	alarms := s.resources("AWS::CloudWatch::Alarm")
	if len(alarms) == 0 {
		t.Fatal("no alarms")
	}
	for id, a := range alarms {
		name := a["Properties"].(map[string]any)["AlarmName"].(string)
		sns, kms := publish("arn:aws:cloudwatch:us-east-1:111122223333:alarm:"+name, "111122223333", "true")
		if ok, why := allows(t, policy["PolicyDocument"], sns, env); !ok {
			t.Errorf("alarm %s cannot publish to the topic: %s", id, why)
		}
		for _, r := range kms {
			if ok, why := allows(t, key["KeyPolicy"], r, env); !ok {
				t.Errorf("alarm %s: CloudWatch may not %s with the topic's key: %s", id, r.action, why)
			}
		}
	}
	for what, tc := range map[string][3]string{
		"another account's alarm": {"arn:aws:cloudwatch:us-east-1:444455556666:alarm:" + s.cfg.Settings.Prefix + "-DlqArrivals", "444455556666", "true"},
		"an alarm of no stack":    {"arn:aws:cloudwatch:us-east-1:111122223333:alarm:somebody-else", "111122223333", "true"},
		"another region's alarm":  {"arn:aws:cloudwatch:eu-west-1:111122223333:alarm:" + s.cfg.Settings.Prefix + "-DlqArrivals", "111122223333", "true"},
	} {
		sns, kms := publish(tc[0], tc[1], tc[2])
		if ok, why := allows(t, policy["PolicyDocument"], sns, env); ok {
			t.Errorf("%s may publish to the topic: %s", what, why)
		}
		for _, r := range kms {
			if ok, why := allows(t, key["KeyPolicy"], r, env); ok {
				t.Errorf("%s may %s with the key: %s", what, r.action, why)
			}
		}
	}
	sns, _ := publish("arn:aws:cloudwatch:us-east-1:111122223333:alarm:"+s.cfg.Settings.Prefix+"-DlqArrivals", "111122223333", "false")
	if ok, _ := allows(t, policy["PolicyDocument"], sns, env); ok {
		t.Error("the topic accepts a publish without TLS")
	}
}

// LimitsLocal fires on one take or slot enter a worker held to its own
// share because the buckets table did not answer: the worker's
// LimitsLocal summed over both limits, >= 1 in a period, quiet without
// datapoints; its description names the buckets table, the share and the
// sections of the docs it cites, which must be headings there.
func TestLimitsLocalAlarm(t *testing.T) {
	s := defaults(t)
	a := alarm(t, s, "LimitsLocal")
	expr, metrics := queries(t, a)
	if expr != limitsLocalExpression {
		t.Errorf("expression %q, want %q", expr, limitsLocalExpression)
	}
	var limits []string
	for id, m := range metrics {
		metric := m["Metric"].(map[string]any)
		dims := metric["Dimensions"].([]any)
		dim := dims[0].(map[string]any)
		if metricName(m) != "LimitsLocal" || metric["Namespace"] != emf.Namespace || len(dims) != 1 || dim["Name"] != "Limit" ||
			dim["Value"] != id || m["Stat"] != "Sum" || m["Period"] != 300.0 {
			t.Errorf("metric %s = %v, want LimitsLocal{Limit=%s}, summed over 5 minutes", id, m, id)
		}
		limits = append(limits, id)
	}
	if !equalSets(limits, []string{"bucket", "slots", "spend"}) {
		t.Errorf("LimitsLocal sums limits %v, want bucket, slots and spend", limits)
	}
	if a["Threshold"] != 1.0 || a["ComparisonOperator"] != "GreaterThanOrEqualToThreshold" || a["EvaluationPeriods"] != 1.0 ||
		a["TreatMissingData"] != "notBreaching" {
		t.Errorf("LimitsLocal %v, want >= 1 in a period, missing data OK", a)
	}
	d, _ := a["AlarmDescription"].(string)
	for _, w := range []string{s.cfg.Settings.BucketsTableName(), "AIJOBS_MAX_CONCURRENCY", "held locally", "ThrottledRequests"} {
		if !strings.Contains(d, w) {
			t.Errorf("LimitsLocal description %q does not say %q", d, w)
		}
	}
	for doc, heading := range map[string]string{"docs/ratelimits.md": "Provider rate limits", "docs/fairness.md": "Tenant fairness"} {
		if !strings.Contains(d, doc+", "+heading) {
			t.Errorf("LimitsLocal description %q does not cite %s, %s", d, doc, heading)
		}
		text, err := os.ReadFile(filepath.Join("..", doc))
		if err != nil {
			t.Fatal(err)
		}
		if !regexp.MustCompile(`(?m)^#+ ` + regexp.QuoteMeta(heading) + `\s*$`).Match(text) {
			t.Errorf("%s has no heading %q, which LimitsLocal cites", doc, heading)
		}
	}
	if len(d) > 1024 {
		t.Errorf("LimitsLocal: description of %d characters, CloudWatch allows 1024", len(d))
	}
}

// InFlightNearQuota fires when the job queue's messages in flight
// (ApproximateNumberOfMessagesNotVisible, Maximum over 5 minutes) reach
// inFlightAlarmShare (0.8 by default) of SQS's in-flight quota of 120,000;
// the share comes from the context, and a share outside (0, 1] fails the
// synth. Its description names the knob that moves waits out of flight and
// the section of the docs it cites, which must be a heading there.
func TestInFlightNearQuotaAlarm(t *testing.T) {
	s := defaults(t)
	a := alarm(t, s, "InFlightNearQuota")
	queueID, _ := s.one(t, "AWS::SQS::Queue", named("QueueName", s.cfg.Settings.QueueName()))
	dims, _ := a["Dimensions"].([]any)
	if ns, name, stat, period := single(t, a); ns != "AWS/SQS" || name != "ApproximateNumberOfMessagesNotVisible" || stat != "Maximum" ||
		period != 300 || len(dims) != 1 || ref(dims[0].(map[string]any)["Value"]) != queueID {
		t.Errorf("InFlightNearQuota %v, want the job queue's ApproximateNumberOfMessagesNotVisible, Maximum over 5 minutes", a)
	}
	if a["Threshold"] != 96_000.0 || a["ComparisonOperator"] != "GreaterThanOrEqualToThreshold" || a["EvaluationPeriods"] != 1.0 ||
		a["TreatMissingData"] != "notBreaching" {
		t.Errorf("InFlightNearQuota %v, want >= 96000 (80%% of 120,000) in a period, missing data OK", a)
	}
	d, _ := a["AlarmDescription"].(string)
	for _, w := range []string{"AIJOBS_REQUEUE_AFTER", s.cfg.Settings.RequeueAfter.String(), "120000", "docs/fairness.md, Long waits leave the in-flight count"} {
		if !strings.Contains(d, w) {
			t.Errorf("InFlightNearQuota description %q does not say %q", d, w)
		}
	}
	text, err := os.ReadFile(filepath.Join("..", "docs", "fairness.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`(?m)^#+ Long waits leave the in-flight count\s*$`).Match(text) {
		t.Errorf("docs/fairness.md has no heading the InFlightNearQuota alarm cites")
	}
	if len(d) > 1024 {
		t.Errorf("InFlightNearQuota: description of %d characters, CloudWatch allows 1024", len(d))
	}
	if a := alarm(t, build(t, map[string]any{"inFlightAlarmShare": "0.5"}, false), "InFlightNearQuota"); a["Threshold"] != 60_000.0 {
		t.Errorf("threshold %v with inFlightAlarmShare 0.5, want 60000", a["Threshold"])
	}
	for _, bad := range []string{"0", "1.5", "-0.2"} {
		if _, err := LoadConfig(mapLookup(testContext(t, map[string]any{"inFlightAlarmShare": bad}))); err == nil ||
			!strings.Contains(err.Error(), "inFlightAlarmShare") {
			t.Errorf("inFlightAlarmShare %s: %v, want refused", bad, err)
		}
	}
}

// ReceivedManyTimesAge watches what ApproximateAgeOfOldestMessage leaves
// out (messages received three times or more): the worker's
// ReceivedManyTimesAge, Maximum over 5 minutes, against the default
// deadline as OldestJobAge is, quiet without datapoints.
func TestReceivedManyTimesAgeAlarm(t *testing.T) {
	s := defaults(t)
	a := alarm(t, s, "ReceivedManyTimesAge")
	if ns, name, stat, period := single(t, a); ns != emf.Namespace || name != "ReceivedManyTimesAge" || stat != "Maximum" || period != 300 {
		t.Errorf("ReceivedManyTimesAge %v, want the worker's ReceivedManyTimesAge, Maximum over 5 minutes", a)
	}
	old := alarm(t, s, "OldestJobAge")
	for _, k := range []string{"Threshold", "ComparisonOperator", "EvaluationPeriods", "DatapointsToAlarm", "TreatMissingData"} {
		if a[k] != old[k] {
			t.Errorf("%s: ReceivedManyTimesAge %v, OldestJobAge %v, want the same", k, a[k], old[k])
		}
	}
	if a["Threshold"] != s.cfg.Settings.Limits.DefaultDeadline.Seconds() || a["TreatMissingData"] != "notBreaching" {
		t.Errorf("ReceivedManyTimesAge %v, want the default deadline in seconds, missing data OK", a)
	}
	d, _ := a["AlarmDescription"].(string)
	for _, w := range []string{"3 times or more", "ApproximateAgeOfOldestMessage", "OldestJobAge", s.cfg.Settings.Limits.DefaultDeadline.String()} {
		if !strings.Contains(d, w) {
			t.Errorf("ReceivedManyTimesAge description %q does not say %q", d, w)
		}
	}
	if len(d) > 1024 {
		t.Errorf("ReceivedManyTimesAge: description of %d characters, CloudWatch allows 1024", len(d))
	}
}

// SpendDeferred and SpendShareReached fire on one count of the worker's
// metric of the same name (no dimension: the tenant is in the worker's
// log line) in 5 minutes, quiet without datapoints; their descriptions
// name the variables and cite docs/spend.md headings that exist.
func TestSpendAlarms(t *testing.T) {
	s := defaults(t)
	for id, cites := range map[string]string{"SpendDeferred": "Holds", "SpendShareReached": "Seen coming: alarms and the webhook"} {
		a := alarm(t, s, id)
		if ns, name, stat, period := single(t, a); ns != emf.Namespace || name != id || stat != "Sum" || period != 300 {
			t.Errorf("%s %v, want the worker's %s summed over 5 minutes", id, a, id)
		}
		if a["Threshold"] != 1.0 || a["ComparisonOperator"] != "GreaterThanOrEqualToThreshold" || a["EvaluationPeriods"] != 1.0 ||
			a["TreatMissingData"] != "notBreaching" {
			t.Errorf("%s %v, want >= 1 in a period, missing data OK", id, a)
		}
		d, _ := a["AlarmDescription"].(string)
		if !strings.Contains(d, "AIJOBS_TENANT_SPEND") || !strings.Contains(d, strings.Join([]string{"docs/spend.md", cites}, ", ")) || len(d) > 1024 {
			t.Errorf("%s description %q (%d characters): want AIJOBS_TENANT_SPEND and docs/spend.md, %s, at most 1024", id, d, len(d), cites)
		}
		text, err := os.ReadFile(filepath.Join("..", "docs/spend.md"))
		if err != nil {
			t.Fatal(err)
		}
		if !regexp.MustCompile(`(?m)^#+ ` + regexp.QuoteMeta(cites) + `\s*$`).Match(text) {
			t.Errorf("docs/spend.md has no heading %q, which %s cites", cites, id)
		}
	}
}
