package main

import (
	"fmt"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatch"
	"github.com/aws/aws-cdk-go/awscdk/v2/interfaces/interfacesawscloudwatch"
	"github.com/aws/jsii-runtime-go"

	"github.com/aijobs/aijobs/pkg/emf"
)

// newDashboard shows the alarms' signals next to the context an operator
// needs to read them: traffic, queue depth, outcomes by error class, spend.
// Unlike alarms, graphs can use SEARCH, so every error class appears
// without being listed.
func newDashboard(stack awscdk.Stack, cfg Config, q Queues, f Functions, api API, sig Signals, alarms Alarms) awscloudwatch.Dashboard {
	opts := func(stat string) *awscloudwatch.MetricOptions {
		return &awscloudwatch.MetricOptions{Statistic: jsii.String(stat), Period: seconds(period)}
	}
	jobs := func(name string) awscloudwatch.IMetric {
		return awscloudwatch.NewMetric(&awscloudwatch.MetricProps{
			Namespace: jsii.String(emf.Namespace), MetricName: jsii.String(name),
			Statistic: jsii.String("Sum"), Period: seconds(period),
		})
	}
	byClass := func(name string) awscloudwatch.IMetric {
		return awscloudwatch.NewMathExpression(&awscloudwatch.MathExpressionProps{
			Expression: jsii.String(fmt.Sprintf("SEARCH('{%s,ErrorClass} MetricName=\"%s\"', 'Sum', %d)", emf.Namespace, name, int(period.Seconds()))),
			Label:      jsii.String(name),
			Period:     seconds(period),
		})
	}
	graph := func(title string, width float64, left []awscloudwatch.IMetric, right ...awscloudwatch.IMetric) awscloudwatch.IWidget {
		return awscloudwatch.NewGraphWidget(&awscloudwatch.GraphWidgetProps{
			Title: jsii.String(title), Width: jsii.Number(width), Height: jsii.Number(6),
			Left: &left, Right: &right,
		})
	}
	m := func(ms ...awscloudwatch.IMetric) []awscloudwatch.IMetric { return ms }
	byState := func(name string) []awscloudwatch.IMetric {
		var out []awscloudwatch.IMetric
		for _, state := range reconcileStates {
			out = append(out, dimensionMetric(name, "State", state))
		}
		return out
	}
	alarmList := make([]interfacesawscloudwatch.IAlarmRef, len(alarms.All))
	for i, a := range alarms.All {
		alarmList[i] = a
	}
	rows := [][]awscloudwatch.IWidget{
		{awscloudwatch.NewAlarmStatusWidget(&awscloudwatch.AlarmStatusWidgetProps{
			Title: jsii.String("Alarms"), Alarms: &alarmList, Width: jsii.Number(24), Height: jsii.Number(3),
		})},
		{
			graph("API requests and errors", 8, m(api.HTTP.MetricCount(opts("Sum")), api.HTTP.MetricClientError(opts("Sum")), sig.API5xx)),
			graph("API latency (p99)", 8, m(api.HTTP.MetricLatency(opts("p99")), f.API.MetricDuration(opts("p99")))),
			graph("Worker invocations, errors, throttles", 8, m(f.Worker.MetricInvocations(opts("Sum")), sig.WorkerErrors, sig.WorkerThrottles)),
		},
		{
			graph("Job queue: waiting and in flight", 8, m(q.Jobs.MetricApproximateNumberOfMessagesVisible(opts("Maximum")),
				q.Jobs.MetricApproximateNumberOfMessagesNotVisible(opts("Maximum")))),
			graph("Oldest job id in the queue (s)", 8, m(sig.OldestJob)),
			graph("DLQ: arrivals (left), waiting and in flight (right)", 8, m(sig.DLQArrivals),
				q.DLQ.MetricApproximateNumberOfMessagesVisible(opts("Maximum")), q.DLQ.MetricApproximateNumberOfMessagesNotVisible(opts("Maximum"))),
		},
		{
			graph("Jobs failed by error class", 8, m(byClass("JobsFailed"))),
			graph("Jobs abandoned by error class", 8, m(byClass("JobsAbandoned"))),
			graph("Jobs succeeded, retried", 8, m(jobs("JobsSucceeded"), byClass("JobsRetried"))),
		},
		{
			graph("Spend (cents per hour)", 8, m(sig.SpendPerHour)),
			graph("Attempt duration (p50, p99, ms)", 8, m(
				awscloudwatch.NewMetric(&awscloudwatch.MetricProps{Namespace: jsii.String(emf.Namespace), MetricName: jsii.String("AttemptDuration"), Statistic: jsii.String("p50"), Period: seconds(period)}),
				awscloudwatch.NewMetric(&awscloudwatch.MetricProps{Namespace: jsii.String(emf.Namespace), MetricName: jsii.String("AttemptDuration"), Statistic: jsii.String("p99"), Period: seconds(period)}),
			), f.Worker.Metric(jsii.String("ConcurrentExecutions"), opts("Maximum"))),
			graph("Duplicates absorbed, leases lost, poison messages", 8, m(jobs("DuplicatesAbsorbed"), jobs("LeasesLost"), jobs("PoisonMessages"))),
		},
		{
			graph("Reconciler runs, errors (duration p99 right)", 8, m(f.Reconciler.MetricInvocations(opts("Sum")), sig.ReconcilerErrors,
				jobs("ReconcileErrors")), f.Reconciler.MetricDuration(opts("p99"))),
			graph("Reconcile candidates, backlog, dead-lettered jobs", 8, m(jobs("ReconcileCandidates"), jobs("ReconcileBacklog"),
				jobs("DeadLetteredJobs"))),
			graph("Reconciled (re-sent) by state: lost messages", 8, append(byState("Reconciled"), sig.MessagesLost)),
		},
		{
			graph("Notifier invocations, errors (stream age right, ms)", 8, m(f.Notifier.MetricInvocations(opts("Sum")), sig.NotifierErrors),
				sig.NoticesHeldBack),
			graph("Callbacks: notices, delivered, failed, given up", 8, m(jobs("CallbackNotices"), jobs("CallbacksDelivered"),
				jobs("CallbackFailures"), jobs("CallbacksDeadLettered"), jobs("CallbacksGone"), jobs("CallbacksSuperseded"))),
			graph("Callback queue: waiting, in flight (DLQ arrivals right)", 8, m(
				q.Callbacks.MetricApproximateNumberOfMessagesVisible(opts("Maximum")),
				q.Callbacks.MetricApproximateNumberOfMessagesNotVisible(opts("Maximum"))), sig.CallbackDLQArrivals),
		},
	}
	widgets := make([]*[]awscloudwatch.IWidget, len(rows))
	for i := range rows {
		widgets[i] = &rows[i]
	}
	// Dashboard names are account-wide, not per Region: the Region in the
	// name lets the stack deploy to a second Region of the same account.
	return awscloudwatch.NewDashboard(stack, jsii.String("Dashboard"), &awscloudwatch.DashboardProps{
		DashboardName: jsii.String(cfg.Settings.Prefix + "-" + *stack.Region()),
		Widgets:       &widgets,
	})
}
