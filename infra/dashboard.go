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
func newDashboard(stack awscdk.Stack, cfg Config, m Monitored, sig Signals, alarms Alarms) awscloudwatch.Dashboard {
	rows := [][]awscloudwatch.IWidget{alarmStatusRow(alarms)}
	rows = append(rows, trafficRows(m, sig)...)
	rows = append(rows, outcomeRows(m, sig)...)
	rows = append(rows, reconcilerRow(m, sig), callbackRow(m, sig))
	if m.Functions.Collector != nil {
		rows = append(rows, collectorRow(m, sig))
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

// alarmStatusRow is every alarm's state, first, so an operator sees what
// fires before reading any graph.
func alarmStatusRow(alarms Alarms) []awscloudwatch.IWidget {
	alarmList := make([]interfacesawscloudwatch.IAlarmRef, len(alarms.All))
	for i, a := range alarms.All {
		alarmList[i] = a
	}
	return []awscloudwatch.IWidget{awscloudwatch.NewAlarmStatusWidget(&awscloudwatch.AlarmStatusWidgetProps{
		Title: jsii.String("Alarms"), Alarms: &alarmList, Width: jsii.Number(24), Height: jsii.Number(3),
	})}
}

// trafficRows are the requests coming in and the jobs moving through the
// queues: the API, the worker, the job queue and its DLQ.
func trafficRows(m Monitored, sig Signals) [][]awscloudwatch.IWidget {
	q, f, api := m.Queues, m.Functions, m.API
	return [][]awscloudwatch.IWidget{
		{
			graph("API requests and errors", metrics(api.HTTP.MetricCount(metricOptions("Sum", period)),
				api.HTTP.MetricClientError(metricOptions("Sum", period)), sig.API5xx)),
			graph("API latency (p99)", metrics(api.HTTP.MetricLatency(metricOptions("p99", period)), f.API.MetricDuration(metricOptions("p99", period)))),
			graph("Worker invocations, errors, throttles", metrics(f.Worker.MetricInvocations(metricOptions("Sum", period)), sig.WorkerErrors,
				sig.WorkerThrottles)),
		},
		{
			graph("Job queue: waiting and in flight", metrics(q.Jobs.MetricApproximateNumberOfMessagesVisible(metricOptions("Maximum", period)),
				q.Jobs.MetricApproximateNumberOfMessagesNotVisible(metricOptions("Maximum", period)))),
			graph("Oldest job id in the queue (s)", metrics(sig.OldestJob)),
			graph("DLQ: arrivals (left), waiting and in flight (right)", metrics(sig.DLQArrivals),
				q.DLQ.MetricApproximateNumberOfMessagesVisible(metricOptions("Maximum", period)),
				q.DLQ.MetricApproximateNumberOfMessagesNotVisible(metricOptions("Maximum", period))),
		},
		{
			// The job queue as a fair queue (alarms.go, oldestQuietMetric):
			// the wait of the tenants SQS does not deprioritise, beside how
			// many it does.
			graph("Job queue fairness: oldest quiet-tenant job id (s), noisy tenants (right)", metrics(sig.OldestQuietJob),
				q.Jobs.Metric(jsii.String(noisyGroupsMetric), metricOptions("Maximum", period))),
		},
	}
}

// outcomeRows are what became of the jobs and what they cost: outcomes
// by error class, spend, attempt duration and the worker's safety nets.
func outcomeRows(m Monitored, sig Signals) [][]awscloudwatch.IWidget {
	return [][]awscloudwatch.IWidget{
		{
			graph("Jobs failed by error class", metrics(byClass("JobsFailed"))),
			graph("Jobs abandoned by error class", metrics(byClass("JobsAbandoned"))),
			graph("Jobs succeeded, retried", metrics(jobMetric("JobsSucceeded"), byClass("JobsRetried"))),
		},
		{
			graph("Spend (cents per hour)", metrics(sig.SpendPerHour)),
			graph("Attempt duration (p50, p99, ms)", metrics(emfMetric("AttemptDuration", "p50", period), emfMetric("AttemptDuration", "p99", period)),
				m.Functions.Worker.Metric(jsii.String("ConcurrentExecutions"), metricOptions("Maximum", period))),
			graph("Duplicates absorbed, leases lost, poison messages", metrics(jobMetric("DuplicatesAbsorbed"), jobMetric("LeasesLost"),
				jobMetric("PoisonMessages"))),
		},
	}
}

// reconcilerRow is the reconciler's runs and what it found and re-sent.
func reconcilerRow(m Monitored, sig Signals) []awscloudwatch.IWidget {
	r := m.Functions.Reconciler
	var byState []awscloudwatch.IMetric
	for _, state := range reconcileStates {
		byState = append(byState, dimensionMetric("Reconciled", "State", state))
	}
	return []awscloudwatch.IWidget{
		graph("Reconciler runs, errors (duration p99 right)", metrics(r.MetricInvocations(metricOptions("Sum", period)), sig.ReconcilerErrors,
			jobMetric("ReconcileErrors")), r.MetricDuration(metricOptions("p99", period))),
		graph("Reconcile candidates, backlog, dead-lettered jobs", metrics(jobMetric("ReconcileCandidates"), jobMetric("ReconcileBacklog"),
			jobMetric("DeadLetteredJobs"))),
		graph("Reconciled (re-sent) by state: lost messages", append(byState, sig.MessagesLost)),
	}
}

// callbackRow is the notifier: its invocations and stream age, the
// callbacks' outcomes and the callback queue.
func callbackRow(m Monitored, sig Signals) []awscloudwatch.IWidget {
	n, q := m.Functions.Notifier, m.Queues
	return []awscloudwatch.IWidget{
		graph("Notifier invocations, errors (stream age right, ms)", metrics(n.MetricInvocations(metricOptions("Sum", period)), sig.NotifierErrors),
			sig.NoticesHeldBack),
		graph("Callbacks: notices, delivered, failed, given up", metrics(jobMetric("CallbackNotices"), jobMetric("CallbacksDelivered"),
			jobMetric("CallbackFailures"), jobMetric("CallbacksDeadLettered"), jobMetric("CallbacksGone"), jobMetric("CallbacksSuperseded"))),
		graph("Callback queue: waiting, in flight (DLQ arrivals right)", metrics(
			q.Callbacks.MetricApproximateNumberOfMessagesVisible(metricOptions("Maximum", period)),
			q.Callbacks.MetricApproximateNumberOfMessagesNotVisible(metricOptions("Maximum", period))), sig.CallbackDLQArrivals),
	}
}

// collectorRow is the batch lane's collector: its runs, failed runs and
// throttles (one run at a time: a run still going when the next is due),
// and how long a run takes against its timeout; beside them, the jobs
// whose lease ended in the lane before any collector took them (the
// worker's AttemptsUncollected), which a collector that runs keeps at 0,
// and the batches a provider refused to make (BatchesRefused, alarmed).
func collectorRow(m Monitored, sig Signals) []awscloudwatch.IWidget {
	c := m.Functions.Collector
	return []awscloudwatch.IWidget{
		graph("Collector runs, errors, throttles (duration p99 and max right, ms)", metrics(c.MetricInvocations(metricOptions("Sum", period)),
			sig.CollectorErrors, c.MetricThrottles(metricOptions("Sum", period))), c.MetricDuration(metricOptions("p99", period)),
			c.MetricDuration(metricOptions("Maximum", period))),
		graph("Batch lane: jobs no collector took in time", metrics(jobMetric("AttemptsUncollected"))),
		graph("Batch lane: batches a provider refused", metrics(sig.BatchesRefused)),
	}
}

// graph is a dashboard graph a third of the row wide, left metrics on the
// left axis and right ones on the right: every graph here is that size,
// so a row holds three.
func graph(title string, left []awscloudwatch.IMetric, right ...awscloudwatch.IMetric) awscloudwatch.IWidget {
	return awscloudwatch.NewGraphWidget(&awscloudwatch.GraphWidgetProps{
		Title: jsii.String(title), Width: jsii.Number(8), Height: jsii.Number(6),
		Left: &left, Right: &right,
	})
}

// metrics is its arguments as a slice: a graph's left axis reads as a list.
func metrics(ms ...awscloudwatch.IMetric) []awscloudwatch.IMetric { return ms }

// jobMetric is one of the functions' EMF counts, summed per period.
func jobMetric(name string) awscloudwatch.IMetric {
	return emfMetric(name, "Sum", period)
}

// byClass is one of the functions' EMF counts per error class: a SEARCH,
// so a class the alarms do not list shows too.
func byClass(name string) awscloudwatch.IMetric {
	return awscloudwatch.NewMathExpression(&awscloudwatch.MathExpressionProps{
		Expression: jsii.String(fmt.Sprintf("SEARCH('{%s,ErrorClass} MetricName=\"%s\"', 'Sum', %d)", emf.Namespace, name, int(period.Seconds()))),
		Label:      jsii.String(name),
		Period:     seconds(period),
	})
}
