package main

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatch"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatchactions"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awskms"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssns"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssnssubscriptions"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	"github.com/aws/jsii-runtime-go"

	"github.com/aijobs/aijobs/pkg/emf"
	"github.com/aijobs/aijobs/pkg/job"
	"github.com/aijobs/aijobs/pkg/settings"
)

// dlqArrivalExpression counts the messages that arrived in the DLQ in a
// minute, from counts that only arrivals move:
//
//   - sent, the DLQ's NumberOfMessagesSent: every message the worker
//     dead-letters itself (a poison message, or one whose receive count
//     reached maxReceiveCount - 1), which is every message a worker saw;
//   - marked, the reconciler's DeadLetteredJobs: the jobs its DLQ sweep
//     marked failed/dead_lettered, which catches the messages SQS's own
//     redrive moved (no worker ever saw them, and SQS does not count a
//     redrive in NumberOfMessagesSent: SQS developer guide,
//     sqs-dead-letter-queues.html) at the sweep after they arrive.
//
// A message the worker sends is counted by both; the alarm only asks for
// one. Nothing here reads the queue's depth: a replay or a sweep hiding and
// restoring messages, deletes and expiry move the depth without an arrival,
// the approximate counts have reported a message that was not there
// (cdklabs/construct-hub#1758, #1779), and a depth going down hides an
// arrival. FILL(…, 0) because a count is not published for a minute with
// nothing (an idle queue, a minute without a sweep). docs/deploy.md,
// "The DLQ alarms", has the bounds; TestDLQArrivalAlarmSimulation proves
// them.
const dlqArrivalExpression = "FILL(sent, 0) + FILL(marked, 0)"

// dlqMetricDelay is how late an arrival's datapoint may come: SQS stops
// publishing for a queue idle six hours, and its metrics can come up to 15
// minutes late when it wakes. The arrival alarm looks back over this many
// one-minute periods, plus margin, so a late datapoint still falls in its
// window when it arrives (the FILL in an alarm otherwise "replaces that
// missing data point", CloudWatch User Guide, using-metric-math.html).
const dlqMetricDelay = 15 * time.Minute

// dlqArrivalPeriods is the arrival alarm's evaluation periods (1 minute
// each, 1 of them to alarm).
const dlqArrivalPeriods = int((dlqMetricDelay + 5*time.Minute) / time.Minute)

// dlqWaitingExpression is the average number of messages in the DLQ over
// the period, visible or in flight (a replay or a sweep only moves them
// between the two): the sums of both counts over the minutes the queue
// reported its depth. Not the average of each: SQS reports
// ApproximateNumberOfMessagesNotVisible only while messages are in flight
// (sqs-available-cloudwatch-metrics.html), so its own average leaves out
// the minutes it was 0. An average ignores a reading of less than a minute
// (cdklabs/construct-hub#1758, #1779). A period without any depth reading
// (an idle, empty queue) divides by nothing and has no datapoint.
const dlqWaitingExpression = "(FILL(visible, 0) + FILL(inFlight, 0)) / readings"

// dlqWaitingHours is how long dead letters may wait before the backstop
// fires: every one of this many hours held one on average (half of one,
// against approximate counts).
const dlqWaitingHours = 6

// period is the evaluation period of every alarm but spend.
const period = 5 * time.Minute

// messagesLostExpression sums the reconciler's Reconciled metric over the
// two states it re-sends from (its EMF lines carry the State dimension):
// every job it re-sent had lost its queue message. FILL because the metric
// only exists in periods the reconciler found something.
const messagesLostExpression = "FILL(queued, 0) + FILL(running, 0)"

// limitsLocalExpression sums the worker's LimitsLocal metric over the
// three shared limits a worker holds to its own share of when their table
// does not answer (its EMF lines carry the Limit dimension). FILL because the
// metric only exists in periods a fallback happened.
const limitsLocalExpression = "FILL(bucket, 0) + FILL(slots, 0) + FILL(spend, 0)"

// localLimits are the values of LimitsLocal's Limit dimension.
var localLimits = []string{"bucket", "slots", "spend"}

// callbackDLQArrivalExpression counts the notices arriving in the
// callback DLQ in a minute, as dlqArrivalExpression does for the job DLQ:
//
//   - sent, the callback DLQ's NumberOfMessagesSent: every notice the
//     notifier gave up (callback_gave_up, invalid_notice), every batch the
//     stream mapping discarded (its on-failure destination: Lambda sends
//     it like any client), and every marked copy the sweep sends;
//   - redriven, the notifier's CallbackNoticesRedriven: the notices its
//     sweep (pkg/notifier.Sweep, every ReconcileEvery) found moved there
//     by SQS's redrive after CallbackMaxReceives receives, which SQS does
//     not count in NumberOfMessagesSent (SQS developer guide,
//     sqs-dead-letter-queues.html): a notifier crashing on a notice, or a
//     store it cannot read, would otherwise be silent here.
//
// A redriven notice is counted by both; the alarm only asks for one.
// Never the depth, for the job DLQ's reasons. FILL because neither is
// published for a minute without one. TestCallbackDLQArrivalAlarmSimulation
// proves the bounds.
const callbackDLQArrivalExpression = "FILL(sent, 0) + FILL(redriven, 0)"

// noticesHeldBack is the stream mapping's IteratorAge at which notices
// count as held back: a healthy notifier reads a record within seconds of
// its write; a notice that cannot be sent holds its shard, and DynamoDB
// Streams keeps a record 24 hours.
const noticesHeldBack = 5 * time.Minute

// The job queue is a fair queue: the API sends each job's message with
// MessageGroupId = its tenant (pkg/sqs), which turns on SQS fair queues for
// a standard queue. SQS then deprioritises a tenant it counts as noisy (a
// large share of the messages in flight or of the consumers' time) so the
// other, quiet tenants keep a low dwell time, and publishes, next to the
// queue's usual metrics (AWS/SQS, dimension QueueName):
//
//   - ApproximateNumberOfNoisyGroups: the message groups, here tenants, it
//     counts as noisy right now;
//   - the ...InQuietGroups metrics: each the queue-level metric of the same
//     name without the messages of noisy groups, so
//     ApproximateAgeOfOldestMessageInQuietGroups is the age of the oldest
//     job id of a tenant that is not noisy.
//
// SQS emits them only for a queue used as a fair queue and, like its other
// metrics, only while the queue is active (SQS developer guide, "Fair
// queues" and "Available CloudWatch metrics"): no datapoint is not a
// breach. docs/deploy.md, "Alarms", says what an operator does.
const (
	oldestQuietMetric = "ApproximateAgeOfOldestMessageInQuietGroups"
	noisyGroupsMetric = "ApproximateNumberOfNoisyGroups"
)

// sqsInFlightQuota is how many messages a standard queue may have in
// flight (received, neither deleted nor visible again): "approximately
// 120,000" (SQS developer guide, quotas-messages.html). Past it a receive
// answers nothing, for every tenant, until messages leave flight. The
// worker keeps waits longer than AIJOBS_REQUEUE_AFTER out of flight
// (pkg/worker, crew.wait), so what remains in flight is the jobs being
// worked and the short waits.
const sqsInFlightQuota = 120_000

// manyReceives is the receive count from which SQS leaves a message out of
// ApproximateAgeOfOldestMessage ("messages received three or more times
// are not included": SQS developer guide,
// sqs-available-cloudwatch-metrics.html), and the worker reports its age
// as ReceivedManyTimesAge instead (pkg/worker, manyReceives).
const manyReceives = 3

// reconcileStates are the values of the reconciler's State dimension.
var reconcileStates = []string{"queued", "running"}

// Alarms is the alarm topic and every alarm, for outputs and the dashboard.
type Alarms struct {
	Topic awssns.Topic
	All   []awscloudwatch.Alarm
}

// Signals are the metrics the alarms and the dashboard share.
type Signals struct {
	DLQArrivals awscloudwatch.IMetric
	// DLQWaiting is the DLQ's messages, visible and in flight, hourly.
	DLQWaiting awscloudwatch.IMetric
	OldestJob  awscloudwatch.IMetric
	// OldestQuietJob is the age of the oldest job id of a tenant SQS does
	// not count as noisy (oldestQuietMetric).
	OldestQuietJob  awscloudwatch.IMetric
	WorkerErrors    awscloudwatch.IMetric
	WorkerThrottles awscloudwatch.IMetric
	API5xx          awscloudwatch.IMetric
	// RetryableFailed sums JobsFailed over the retryable classes: a job
	// that used up its attempts on them means the provider is unhealthy.
	RetryableFailed awscloudwatch.IMetric
	// ProviderRefused sums JobsFailed over auth and quota_exhausted: the
	// provider key or its spend limit, which no retry fixes.
	ProviderRefused awscloudwatch.IMetric
	SpendPerHour    awscloudwatch.IMetric
	// ReconcilerErrors are the reconciler function's failed runs.
	ReconcilerErrors awscloudwatch.IMetric
	// MessagesLost are the jobs the reconciler re-sent, both states.
	MessagesLost awscloudwatch.IMetric
	// CallbackDLQArrivals are the notices arriving in the callback DLQ.
	CallbackDLQArrivals awscloudwatch.IMetric
	// NotifierErrors are the notifier function's failed invocations.
	NotifierErrors awscloudwatch.IMetric
	// NoticesHeldBack is the age of the stream records the notifier
	// reads (IteratorAge, milliseconds).
	NoticesHeldBack awscloudwatch.IMetric
	// CollectorErrors are the collector function's failed runs; nil when
	// no route offers a batch lane (no collector is deployed).
	CollectorErrors awscloudwatch.IMetric
	// BatchesRefused are the batches whose create a provider refused
	// (pkg/collector's count); nil without a collector.
	BatchesRefused awscloudwatch.IMetric
	// InFlight is the job queue's messages in flight
	// (ApproximateNumberOfMessagesNotVisible), Maximum.
	InFlight awscloudwatch.IMetric
	// ReceivedManyTimesAge is the age of the oldest message a worker
	// received manyReceives times or more (seconds), which
	// ApproximateAgeOfOldestMessage leaves out.
	ReceivedManyTimesAge awscloudwatch.IMetric
	// LimitsLocal are the takes and slot enters the worker held to its
	// own share of a limit because the buckets table did not answer,
	// both limits.
	LimitsLocal awscloudwatch.IMetric
	// SpendDeferred are the jobs the worker deferred because their
	// tenant's spend balance could not cover an attempt, and
	// SpendShareReached the settles that took a tenant's spend past
	// AIJOBS_SPEND_ALARM_SHARE of its limit (docs/spend.md).
	SpendDeferred     awscloudwatch.IMetric
	SpendShareReached awscloudwatch.IMetric
}

// Monitored are the stack's pieces whose own metrics the alarms and the
// dashboard read: newSignals makes the shared signals of them, and the
// dashboard graphs more of their metrics next to those.
type Monitored struct {
	Queues    Queues
	Functions Functions
	API       API
}

// newSignals makes the signals of the monitored pieces and of the
// functions' EMF metrics, once, so an alarm and its dashboard graph can
// never show two different things under one name.
func newSignals(m Monitored) Signals {
	q, f := m.Queues, m.Functions
	var retryable, refused []job.ErrorClass
	for _, c := range job.Classes() {
		switch {
		case c.FinalState() != job.Failed || c == job.DeadLettered:
			// abandoned classes are the caller's limits; dead_lettered only
			// comes from a replay and has its own (DLQ) alarm
		case c.Retryable():
			retryable = append(retryable, c)
		case c == job.Auth || c == job.QuotaExhausted:
			refused = append(refused, c)
		}
	}
	sig := Signals{
		DLQArrivals: dlqArrivals(q.DLQ, dlqArrivalExpression, "marked", "DeadLetteredJobs",
			"messages arriving in the DLQ (sent by the worker + jobs the sweep marked)"),
		DLQWaiting: awscloudwatch.NewMathExpression(&awscloudwatch.MathExpressionProps{
			Expression: jsii.String(dlqWaitingExpression),
			UsingMetrics: &map[string]awscloudwatch.IMetric{
				"visible":  q.DLQ.MetricApproximateNumberOfMessagesVisible(metricOptions("Sum", time.Hour)),
				"inFlight": q.DLQ.MetricApproximateNumberOfMessagesNotVisible(metricOptions("Sum", time.Hour)),
				"readings": q.DLQ.MetricApproximateNumberOfMessagesVisible(metricOptions("SampleCount", time.Hour)),
			},
			Label:  jsii.String("dead letters waiting (hourly average)"),
			Period: seconds(time.Hour),
		}),
		OldestJob:            q.Jobs.MetricApproximateAgeOfOldestMessage(metricOptions("Maximum", period)),
		OldestQuietJob:       q.Jobs.Metric(jsii.String(oldestQuietMetric), metricOptions("Maximum", period)),
		InFlight:             q.Jobs.MetricApproximateNumberOfMessagesNotVisible(metricOptions("Maximum", period)),
		ReceivedManyTimesAge: emfMetric("ReceivedManyTimesAge", "Maximum", period),
		WorkerErrors:         f.Worker.MetricErrors(metricOptions("Sum", period)),
		WorkerThrottles:      f.Worker.MetricThrottles(metricOptions("Sum", period)),
		API5xx:               m.API.HTTP.MetricServerError(metricOptions("Sum", period)),
		RetryableFailed:      sumByClass("jobs failed after retries", retryable),
		ProviderRefused:      sumByClass("jobs refused by the provider (auth, quota)", refused),
		SpendPerHour: awscloudwatch.NewMetric(&awscloudwatch.MetricProps{
			Namespace: jsii.String(emf.Namespace), MetricName: jsii.String("CostCents"),
			Statistic: jsii.String("Sum"), Period: awscdk.Duration_Hours(jsii.Number(1)),
			Label: jsii.String("spend, cents per hour"),
		}),
		ReconcilerErrors: f.Reconciler.MetricErrors(metricOptions("Sum", period)),
		MessagesLost: awscloudwatch.NewMathExpression(&awscloudwatch.MathExpressionProps{
			Expression: jsii.String(messagesLostExpression),
			UsingMetrics: &map[string]awscloudwatch.IMetric{
				"queued":  dimensionMetric("Reconciled", "State", "queued"),
				"running": dimensionMetric("Reconciled", "State", "running"),
			},
			Label:  jsii.String("jobs re-sent by the reconciler (lost messages)"),
			Period: seconds(period),
		}),
		CallbackDLQArrivals: dlqArrivals(q.CallbackDLQ, callbackDLQArrivalExpression, "redriven", "CallbackNoticesRedriven",
			"notices arriving in the callback DLQ (given up, discarded by the stream mapping, or redriven and swept)"),
		NotifierErrors:    f.Notifier.MetricErrors(metricOptions("Sum", period)),
		NoticesHeldBack:   f.Notifier.Metric(jsii.String("IteratorAge"), metricOptions("Maximum", period)),
		LimitsLocal:       limitsLocal(),
		SpendDeferred:     emfMetric("SpendDeferred", "Sum", period),
		SpendShareReached: emfMetric("SpendShareReached", "Sum", period),
	}
	if f.Collector != nil {
		sig.CollectorErrors = f.Collector.MetricErrors(metricOptions("Sum", period))
		sig.BatchesRefused = emfMetric("BatchesRefused", "Sum", period)
	}
	return sig
}

// limitsLocal is the worker's LimitsLocal summed over its Limit dimension
// (limitsLocalExpression).
func limitsLocal() awscloudwatch.IMetric {
	using := map[string]awscloudwatch.IMetric{}
	for _, l := range localLimits {
		using[l] = dimensionMetric("LimitsLocal", "Limit", l)
	}
	return awscloudwatch.NewMathExpression(&awscloudwatch.MathExpressionProps{
		Expression:   jsii.String(limitsLocalExpression),
		UsingMetrics: &using,
		Label:        jsii.String("limits held locally (the buckets table did not answer)"),
		Period:       seconds(period),
	})
}

// dlqArrivals is the arrivals in a dead letter queue per minute: the
// expression over its NumberOfMessagesSent ("sent") and the EMF count
// swept (sweptID in the expression) its sweep publishes, which catches
// what SQS's redrive moved there and SQS does not count as sent. The job
// DLQ and the callback DLQ are watched the same way (dlqArrivalExpression
// and callbackDLQArrivalExpression say why); only these names differ.
func dlqArrivals(dlq awssqs.Queue, expression, sweptID, swept, label string) awscloudwatch.IMetric {
	return awscloudwatch.NewMathExpression(&awscloudwatch.MathExpressionProps{
		Expression: jsii.String(expression),
		UsingMetrics: &map[string]awscloudwatch.IMetric{
			"sent":  dlq.MetricNumberOfMessagesSent(metricOptions("Sum", time.Minute)),
			sweptID: emfMetric(swept, "Sum", time.Minute),
		},
		Label:  jsii.String(label),
		Period: seconds(time.Minute),
	})
}

// metricOptions is a statistic over a period, for an AWS service's own
// metric: the alarms and the dashboard ask for the same ones, so they read
// alike.
func metricOptions(stat string, over time.Duration) *awscloudwatch.MetricOptions {
	return &awscloudwatch.MetricOptions{Statistic: jsii.String(stat), Period: seconds(over)}
}

// emfMetric is one of the functions' EMF metrics (no dimension), as a
// statistic over a period.
func emfMetric(name, stat string, over time.Duration) awscloudwatch.Metric {
	return awscloudwatch.NewMetric(&awscloudwatch.MetricProps{
		Namespace: jsii.String(emf.Namespace), MetricName: jsii.String(name),
		Statistic: jsii.String(stat), Period: seconds(over),
	})
}

// sumByClass adds JobsFailed (the worker's and the collector's ends) over
// the given classes.
// Alarms cannot use SEARCH, so the classes are listed (from pkg/job, so a
// new class is picked up) and stay well under the ten metrics an alarm may
// use. The dashboard shows every class with a SEARCH instead.
func sumByClass(label string, classes []job.ErrorClass) awscloudwatch.IMetric {
	using := map[string]awscloudwatch.IMetric{}
	var terms []string
	for _, c := range classes {
		id := metricID(string(c))
		using[id] = classMetric("JobsFailed", c)
		terms = append(terms, fmt.Sprintf("FILL(%s, 0)", id))
	}
	return awscloudwatch.NewMathExpression(&awscloudwatch.MathExpressionProps{
		Expression:   jsii.String(strings.Join(terms, " + ")),
		UsingMetrics: &using,
		Label:        jsii.String(label),
		Period:       seconds(period),
	})
}

func classMetric(name string, c job.ErrorClass) awscloudwatch.Metric {
	return dimensionMetric(name, "ErrorClass", string(c))
}

// dimensionMetric is one of the functions' EMF metrics with one dimension,
// summed per period.
func dimensionMetric(name, dimension, value string) awscloudwatch.Metric {
	return awscloudwatch.NewMetric(&awscloudwatch.MetricProps{
		Namespace: jsii.String(emf.Namespace), MetricName: jsii.String(name),
		DimensionsMap: &map[string]*string{dimension: jsii.String(value)},
		Statistic:     jsii.String("Sum"), Period: seconds(period),
	})
}

// metricID turns an error class into a metric math id ("rate_limited" ->
// "rateLimited"): ids must start lower case and be alphanumeric.
func metricID(class string) string {
	parts := strings.Split(class, "_")
	for i := 1; i < len(parts); i++ {
		if parts[i] != "" {
			parts[i] = strings.ToUpper(parts[i][:1]) + parts[i][1:]
		}
	}
	return strings.Join(parts, "")
}

// ownAlarmsCondition limits a grant to CloudWatch to this account's alarms
// named like this stack's (every alarm here is <prefix>-<id>), so nobody
// can make CloudWatch publish to the topic on behalf of another alarm (the
// confused deputy: aws:SourceAccount and aws:SourceArn, IAM User Guide,
// confused-deputy.html).
func ownAlarmsCondition(stack awscdk.Stack, prefix string) *map[string]any {
	alarms := stack.FormatArn(&awscdk.ArnComponents{
		Service: jsii.String("cloudwatch"), Resource: jsii.String("alarm"), ResourceName: jsii.String(prefix + "-*"),
		ArnFormat: awscdk.ArnFormat_COLON_RESOURCE_NAME,
	})
	return &map[string]any{
		"StringEquals": map[string]any{"aws:SourceAccount": stack.Account()},
		"ArnLike":      map[string]any{"aws:SourceArn": alarms},
	}
}

// newAlarms is the alarm topic and one alarm per signal (alarmSpecs),
// each with an action on alarm and on recovery.
func newAlarms(stack awscdk.Stack, cfg Config, sig Signals) Alarms {
	a := Alarms{Topic: newAlarmTopic(stack, cfg)}
	for _, spec := range alarmSpecs(cfg, sig) {
		a.All = append(a.All, newAlarm(stack, cfg, a.Topic, spec))
	}
	return a
}

// newAlarmTopic is the topic every alarm notifies, and the alarm e-mail's
// subscription to it. The topic is encrypted with a customer managed key
// because CloudWatch cannot publish to a topic encrypted with the AWS
// managed alias/aws/sns key (its key policy cannot be changed to let
// CloudWatch use it).
func newAlarmTopic(stack awscdk.Stack, cfg Config) awssns.Topic {
	s := cfg.Settings
	key := awskms.NewKey(stack, jsii.String("AlarmTopicKey"), &awskms.KeyProps{
		Description:       jsii.String("aijobs alarm topic encryption"),
		EnableKeyRotation: jsii.Bool(true),
		RemovalPolicy:     removalPolicy(cfg),
		PendingWindow:     awscdk.Duration_Days(jsii.Number(7)),
	})
	cloudwatch := &[]awsiam.IPrincipal{awsiam.NewServicePrincipal(jsii.String("cloudwatch.amazonaws.com"), nil)}
	ownAlarms := ownAlarmsCondition(stack, s.Prefix)
	key.AddToResourcePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Sid:        jsii.String("CloudWatchAlarmsPublish"),
		Principals: cloudwatch,
		Actions:    jsii.Strings("kms:Decrypt", "kms:GenerateDataKey*"),
		Resources:  jsii.Strings("*"), // a key policy's resource is always the key itself
		Conditions: ownAlarms,
	}), nil)
	topic := awssns.NewTopic(stack, jsii.String("AlarmTopic"), &awssns.TopicProps{
		DisplayName: jsii.String(s.Prefix + " alarms"),
		MasterKey:   key,
		EnforceSSL:  jsii.Bool(true),
	})
	// enforceSSL gives the topic a policy, and a topic policy replaces
	// SNS's default one: without this statement nothing allows CloudWatch
	// to publish, and every alarm action fails with "not authorized to
	// perform: SNS:Publish" (AWS Knowledge Center,
	// cloudwatch-receive-sns-for-alarm-trigger).
	topic.AddToResourcePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Sid:        jsii.String("CloudWatchAlarmsPublish"),
		Principals: cloudwatch,
		Actions:    jsii.Strings("sns:Publish"),
		Resources:  &[]*string{topic.TopicArn()},
		Conditions: ownAlarms,
	}))
	if cfg.AlarmEmail != "" {
		topic.AddSubscription(awssnssubscriptions.NewEmailSubscription(jsii.String(cfg.AlarmEmail), nil))
	}
	return topic
}

// alarmSpec is one alarm: its id (the alarm is named <prefix>-<ID>), what
// it means for an operator, and when it fires. An alarm is in ALARM when
// ToAlarm of the last Evaluations periods breach. Most alarms fire on one
// breaching period at or above the threshold, so zero Evaluations and
// ToAlarm mean 1, and no Op means greater than or equal.
type alarmSpec struct {
	ID, What             string
	Metric               awscloudwatch.IMetric
	Threshold            float64
	Op                   awscloudwatch.ComparisonOperator
	Evaluations, ToAlarm int
}

// newAlarm is the alarm spec describes, notifying topic on alarm and on
// recovery.
func newAlarm(stack awscdk.Stack, cfg Config, topic awssns.Topic, spec alarmSpec) awscloudwatch.Alarm {
	op, evaluations, toAlarm := spec.Op, max(spec.Evaluations, 1), max(spec.ToAlarm, 1)
	if op == "" {
		op = awscloudwatch.ComparisonOperator_GREATER_THAN_OR_EQUAL_TO_THRESHOLD
	}
	alarm := awscloudwatch.NewAlarm(stack, jsii.String(spec.ID), &awscloudwatch.AlarmProps{
		AlarmName:          jsii.String(cfg.Settings.Prefix + "-" + spec.ID),
		AlarmDescription:   jsii.String(spec.What + " See docs/deploy.md, section Alarms."),
		Metric:             spec.Metric,
		Threshold:          jsii.Number(spec.Threshold),
		ComparisonOperator: op,
		EvaluationPeriods:  jsii.Number(float64(evaluations)),
		DatapointsToAlarm:  jsii.Number(float64(toAlarm)),
		TreatMissingData:   awscloudwatch.TreatMissingData_NOT_BREACHING,
	})
	alarm.AddAlarmAction(awscloudwatchactions.NewSnsAction(topic))
	alarm.AddOkAction(awscloudwatchactions.NewSnsAction(topic))
	return alarm
}

// alarmSpecs are the stack's alarms, in the order the dashboard's alarm
// status widget lists them: the collector's last, when it is deployed.
func alarmSpecs(cfg Config, sig Signals) []alarmSpec {
	specs := stackAlarmSpecs(cfg, sig)
	if sig.CollectorErrors != nil {
		specs = append(specs, collectorErrorsSpec(cfg.Settings, sig), batchesRefusedSpec(cfg.Settings, sig))
	}
	return specs
}

// batchesRefusedSpec is the alarm on a provider refusing to make a batch
// (a 4xx to its create: a bad request, the key, a quota, a rate limit).
// No run fails for it (its jobs are handed back, charged nothing), so
// CollectorErrors stays quiet; but a refusal usually repeats for every
// batch of the lane until someone fixes its cause, and meanwhile the
// lane's jobs go round it and pay a dearer lane.
func batchesRefusedSpec(s settings.Settings, sig Signals) alarmSpec {
	return alarmSpec{ID: "BatchesRefused", What: fmt.Sprintf("A provider refused to make a batch of the batch lane (%s-collector): its create "+
		"was answered 4xx (invalid request, auth, quota or rate limit), so nothing was generated or billed. Its jobs were handed back "+
		"uncounted, charged nothing, and planned again: while it repeats they go round the batch lane at a dearer price. Read the "+
		"collector's log group: the warning \"the provider refused a batch\" names the batch, lane, class and detail (also on its "+
		"batch record); fix the lane's route, key, quota or the provider's minimum (Bedrock: 100 records a job).", s.Prefix),
		Metric: sig.BatchesRefused, Threshold: 1}
}

// collectorErrorsSpec is the alarm on the collector's failed runs, as
// ReconcilerErrors is on the reconciler's: a run fails when any batch or
// lane could not be carried on (the handler returns the run's error).
func collectorErrorsSpec(s settings.Settings, sig Signals) alarmSpec {
	return alarmSpec{ID: "CollectorErrors", What: fmt.Sprintf("The batch lane's collector (%s-collector) failed a run: a batch it could not "+
		"submit, poll or settle, a lane it could not collect (the provider's batch API or its key, the tables, the queue), or a crash, "+
		"timeout or out of memory. While it fails, jobs wait in the batch lane; when a lease ends, a job still waiting is given back "+
		"with its hold returned (AttemptsUncollected), one in a batch is written off as a dead attempt, and the reconciler re-sends "+
		"both. Read its log group (a warning names each batch and lane); the next run (every %s) carries every batch on from its "+
		"record.", s.Prefix, s.CollectEvery), Metric: sig.CollectorErrors, Threshold: 1}
}

// stackAlarmSpecs are the alarms every stack has.
func stackAlarmSpecs(cfg Config, sig Signals) []alarmSpec {
	s := cfg.Settings
	return []alarmSpec{
		{ID: "DlqArrivals", What: fmt.Sprintf("A message reached the DLQ: the worker dead-lettered it (poison, or received %d times), or SQS moved it "+
			"after every worker failed on it (the reconciler's sweep marked its job dead_lettered). Read the message's aijobs_reason and the "+
			"worker's log, fix the cause, then aijobs replay --from dlq.", s.MaxReceiveCount-1),
			Metric: sig.DLQArrivals, Threshold: 1, Evaluations: dlqArrivalPeriods},
		{ID: "DeadLettersWaiting", What: fmt.Sprintf("Dead letters have been waiting in the DLQ for %d hours: nobody replayed or purged them "+
			"(also catches an arrival DlqArrivals cannot see). Replay them (aijobs replay --from dlq) or purge the DLQ once their jobs "+
			"need nothing more.", dlqWaitingHours),
			Metric: sig.DLQWaiting, Threshold: 0.5, Evaluations: dlqWaitingHours, ToAlarm: dlqWaitingHours},
		{ID: "OldestJobAge", What: fmt.Sprintf("A job id has waited in the queue longer than the default job deadline (%s).", s.Limits.DefaultDeadline),
			Metric: sig.OldestJob, Threshold: s.Limits.DefaultDeadline.Seconds()},
		// The same rule as OldestJobAge (the default deadline, Maximum, one
		// 5-minute period of one): a job that waited that long is abandoned
		// on its next claim, whichever tenant it belongs to. Quiet groups are
		// a subset of the queue, so when this one fires OldestJobAge does
		// too: OldestJobAge alone is a noisy tenant waiting on its own
		// backlog (fair queues at work), both mean the quiet tenants starve.
		{ID: "OldestQuietJobAge", What: fmt.Sprintf("A job id of a tenant SQS does not count as noisy has waited in the job queue longer than the "+
			"default job deadline (%s), although fair queues deprioritise the noisy tenants: a tenant's backlog is starving the others beyond "+
			"what fair queues fix. Check the per-tenant in-flight limit (docs/fairness.md, Tenant fairness), then OldestJobAge's causes.",
			s.Limits.DefaultDeadline), Metric: sig.OldestQuietJob, Threshold: s.Limits.DefaultDeadline.Seconds()},
		{ID: "WorkerErrors", What: "The worker function failed an invocation (crash, timeout, out of memory).", Metric: sig.WorkerErrors, Threshold: 1},
		{ID: "WorkerThrottles", What: "The worker function was throttled (account concurrency).", Metric: sig.WorkerThrottles, Threshold: 1},
		{ID: "Api5xx", What: "The HTTP API answered 5xx.", Metric: sig.API5xx, Threshold: cfg.API5xxPer5Min},
		{ID: "JobsFailedRetryable", What: "Jobs failed after using up their attempts on retryable errors.",
			Metric: sig.RetryableFailed, Threshold: cfg.FailedJobsPer5Min},
		{ID: "JobsRefusedByProvider", What: "Jobs failed on auth or quota_exhausted: the provider key or spend limit needs an operator.",
			Metric: sig.ProviderRefused, Threshold: 1},
		{ID: "SpendPerHour", What: fmt.Sprintf("Model spend exceeded %.0f cents in an hour.", cfg.SpendCentsPerHour),
			Metric: sig.SpendPerHour, Threshold: cfg.SpendCentsPerHour, Op: awscloudwatch.ComparisonOperator_GREATER_THAN_THRESHOLD},
		{ID: "ReconcilerErrors", What: fmt.Sprintf("The reconciler function (%s-reconciler) failed a run: crash, timeout, out of memory or an error it returned. "+
			"While it fails, jobs whose queue message was lost stay stuck. Read its log group, fix the cause; the next run (every %s) "+
			"picks up everything the failed one missed.", s.Prefix, s.ReconcileEvery), Metric: sig.ReconcilerErrors, Threshold: 1},
		{ID: "MessagesLost", What: fmt.Sprintf("Messages are being lost: the reconciler re-sent jobs stuck for %s, queued with no progress (their queue "+
			"message was never sent or was lost) or running with an expired lease (their worker died and the message is gone). The re-send "+
			"goes through the claim path, so nothing runs twice, but find the cause: Api5xx / 503 enqueue_failed (SendMessage failed after "+
			"the record was written), WorkerErrors (crashes, timeouts), a purged queue or messages past the queue's retention. The "+
			"dashboard shows Reconciled by State.", s.ReconcileAfter), Metric: sig.MessagesLost, Threshold: 1},
		{ID: "CallbackDlqArrivals", What: callbackArrivalsWhat(s), Metric: sig.CallbackDLQArrivals, Threshold: 1, Evaluations: dlqArrivalPeriods},
		{ID: "NotifierErrors", What: fmt.Sprintf("The notifier function (%s-notifier) failed an invocation: crash, timeout, out of memory, or it could not "+
			"start (its signing secret %s missing or not whsec_ + base64 of 24..64 bytes, or unreadable). Stream records and notices are "+
			"retried; read its log group.", s.Prefix, s.WebhookSecretName()), Metric: sig.NotifierErrors, Threshold: 1},
		{ID: "NoticesHeldBack", What: fmt.Sprintf("The notifier reads the table's stream more than %s behind: notices cannot be sent to the callback "+
			"queue (SQS, permissions) or the notifier fails (NotifierErrors), and the shard waits, in order. DynamoDB Streams keeps a record "+
			"24 hours and the mapping gives a record up after %s: fix it before then.", noticesHeldBack, streamMaxRecordAge),
			Metric: sig.NoticesHeldBack, Threshold: float64(noticesHeldBack.Milliseconds())},
		limitsLocalSpec(s, sig),
		spendDeferredSpec(sig),
		spendShareSpec(sig),
		inFlightSpec(cfg, sig),
		receivedManyTimesSpec(s, sig),
	}
}

// inFlightSpec is the alarm on the job queue's messages in flight nearing
// SQS's quota (sqsInFlightQuota), at inFlightAlarmShare of it: past the
// quota every receive answers nothing and the queue stalls for every
// tenant.
func inFlightSpec(cfg Config, sig Signals) alarmSpec {
	threshold := math.Floor(cfg.InFlightShare * sqsInFlightQuota)
	return alarmSpec{ID: "InFlightNearQuota", What: fmt.Sprintf("The job queue (%s) had %.0f messages in flight or more (%.0f%% of SQS's "+
		"in-flight quota of about %d on a standard queue): past the quota a receive answers nothing and no tenant's job is worked. "+
		"Waits longer than AIJOBS_REQUEUE_AFTER (%s) leave flight as delayed messages (docs/fairness.md, Long waits leave the in-flight "+
		"count), so look for many short waits: lower AIJOBS_REQUEUE_AFTER, check the worker's MessagesRequeued and JobsDeferred, the "+
		"tenants' limits and WorkerErrors; ask AWS to raise the quota if the load is real.", cfg.Settings.QueueName(), threshold,
		100*cfg.InFlightShare, sqsInFlightQuota, cfg.Settings.RequeueAfter), Metric: sig.InFlight, Threshold: threshold}
}

// receivedManyTimesSpec is the alarm on the age of the messages SQS's own
// age metric leaves out (received manyReceives times or more), against the
// default deadline as OldestJobAge is.
func receivedManyTimesSpec(s settings.Settings, sig Signals) alarmSpec {
	return alarmSpec{ID: "ReceivedManyTimesAge", What: fmt.Sprintf("A job message received %d times or more was older than the default "+
		"job deadline (%s) when a worker received it again (the worker's ReceivedManyTimesAge; SQS leaves such messages out of "+
		"ApproximateAgeOfOldestMessage, so OldestJobAge cannot see them): it keeps coming back without its job ending. Read the "+
		"worker's log for the message's job id: a store or queue that refuses (backoffs after trouble), a crash on the job, or a "+
		"wait re-hidden again and again.", manyReceives, s.Limits.DefaultDeadline),
		Metric: sig.ReceivedManyTimesAge, Threshold: s.Limits.DefaultDeadline.Seconds()}
}

// limitsLocalSpec is the alarm on a shared limit held locally: the buckets
// table (rate-limit buckets, tenants' slots) did not answer a worker, so
// each worker held the limit to its share (the limit over the workers)
// instead of sharing it. Nothing is lost, but the limits are coarser and
// the table is throttled or out.
func limitsLocalSpec(s settings.Settings, sig Signals) alarmSpec {
	return alarmSpec{ID: "LimitsLocal", What: fmt.Sprintf("The buckets table (%s) did not answer a worker's take from a provider's "+
		"bucket or enter of a tenant's slot, after the SDK's retries: the worker held that limit to its own share, the limit over "+
		"AIJOBS_MAX_CONCURRENCY (%d), instead of the shared one (docs/ratelimits.md, Provider rate limits; docs/fairness.md, Tenant "+
		"fairness). Jobs go on, deferred a little more. Read the worker's warnings \"held locally\" (bucket or tenant and error), "+
		"then the table's ThrottledRequests: a hot bucket or slot item, or the table's capacity.", s.BucketsTableName(), s.MaxConcurrency),
		Metric: sig.LimitsLocal, Threshold: 1}
}

// spendDeferredSpec is the alarm on a job deferred because its tenant's
// spend limit could not cover an attempt: the limit is doing its work,
// but its tenant's jobs now wait, and abandon at their deadlines.
func spendDeferredSpec(sig Signals) alarmSpec {
	return alarmSpec{ID: "SpendDeferred", What: "A worker deferred a job because its tenant's spend balance for the day or month could not " +
		"cover the attempt's worst case (AIJOBS_TENANT_SPEND): the job waits, uncounted, until the period ends, the limit is raised or " +
		"the tenant's other attempts settle, and is abandoned spend_limit at its deadline (docs/spend.md, Holds). Read the worker's " +
		"\"job deferred\" lines with error_class spend_limit for the job ids, GET /spend as the tenant for its balance; raise the " +
		"tenant's limit if it should spend more.", Metric: sig.SpendDeferred, Threshold: 1}
}

// spendShareSpec is the alarm on a tenant's spend passing
// AIJOBS_SPEND_ALARM_SHARE of its limit: a warning before its jobs start
// to wait.
func spendShareSpec(sig Signals) alarmSpec {
	return alarmSpec{ID: "SpendShareReached", What: "A settle took a tenant's spend past AIJOBS_SPEND_ALARM_SHARE (default 0.8) of its day " +
		"or month limit (AIJOBS_TENANT_SPEND), counted on one part of its balance: never later than the whole balance passing it, " +
		"possibly a little earlier on a limit of several parts (docs/spend.md, Seen coming: alarms and the webhook). The worker's " +
		"warning \"passed the alarm's share\" names the tenant and period; GET /spend as the tenant shows the balance. Once the " +
		"limit is reached its jobs wait (SpendDeferred).", Metric: sig.SpendShareReached, Threshold: 1}
}

// callbackArrivalsWhat is CallbackDlqArrivals' description: the three ways
// a notice reaches the callback DLQ, and what to do.
func callbackArrivalsWhat(s settings.Settings) string {
	return fmt.Sprintf("A callback notice reached %s: the notifier gave it up (attribute aijobs_reason: callback_gave_up after "+
		"%d attempts over at least %s, or at once for a target that now resolves to a refused address; invalid_notice), or the stream "+
		"mapping discarded a batch it could not turn into notices for %s (a message describing the shard and sequence numbers, no "+
		"aijobs_reason), or SQS moved it after %d receives without a delivery (the notifier's sweep marks it callback_redriven: "+
		"the notifier crashed on it or could not read the store). The jobs are unaffected and pollable; read the notifier's log for the job ids "+
		"and the receivers' status codes.",
		s.CallbackDLQName(), s.CallbackAttempts, s.CallbackSpan().Round(time.Hour), streamMaxRecordAge, s.CallbackMaxReceives())
}
