package main

import (
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsdynamodb"
	"github.com/aws/aws-cdk-go/awscdk/v2/awss3"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssecretsmanager"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"
)

// NewStack builds the whole deployment in one stack: the jobs table, the
// tenants table, the quarantine table, the buckets table (rate-limit
// buckets, tenants' slots, batch records), the job queue and its DLQ, the parking bucket, the four functions
// (API, worker, scheduled reconciler, notifier) and, when a route offers
// a batch lane, the scheduled collector (and, for a batch lane on
// Bedrock, its batch bucket and service role), the callback queue and its DLQ,
// the webhook signing secret, the HTTP API, the operators' policy, the
// alarms and the dashboard. Every number comes from cfg.Settings, the
// same settings the functions load at start.
func NewStack(scope constructs.Construct, cfg Config) awscdk.Stack {
	stack := awscdk.NewStack(scope, jsii.String(cfg.StackName), &awscdk.StackProps{
		Description: jsii.String("aijobs: slow AI model calls as background jobs (API, queue, worker, job records)"),
	})
	table := newTable(stack, cfg)
	tenants := newTenantsTable(stack, cfg)
	quarantine := newQuarantineTable(stack, cfg)
	buckets := newBucketsTable(stack, cfg)
	queues := newQueues(stack, cfg)
	park := newParkingBucket(stack, cfg)
	payloads := newPayloadBucket(stack, cfg)
	secret := newWebhookSecret(stack, cfg)
	batch := newBedrockBatch(stack, cfg)
	fns := newFunctions(stack, cfg, Shared{Table: table, Tenants: tenants, Quarantine: quarantine, Buckets: buckets, Queues: queues, Park: park,
		Payloads: payloads, WebhookSecret: secret, BedrockBatch: batch})
	api := newAPI(stack, cfg, fns.API)
	operator := newOperatorPolicy(stack, cfg, Shared{Table: table, Quarantine: quarantine, Queues: queues, Buckets: buckets})
	monitored := Monitored{Queues: queues, Functions: fns, API: api}
	signals := newSignals(monitored)
	alarms := newAlarms(stack, cfg, signals)
	newDashboard(stack, cfg, monitored, signals, alarms)

	output(stack, "ApiUrl", api.Stage.Url(), "HTTP API base URL (IAM-signed or JWT requests)")
	output(stack, "TableName", table.TableName(), "jobs table")
	output(stack, "TenantsTableName", tenants.TableName(), "tenants table: each tenant's webhook key versions")
	output(stack, "QuarantineTableName", quarantine.TableName(), "quarantine table: the inputs known to fail, refused at create")
	output(stack, "BucketsTableName", buckets.TableName(), "the buckets table: each provider key's rate-limit bucket, each tenant's jobs in flight and queued, the batch lane's batch records")
	output(stack, "QueueUrl", queues.Jobs.QueueUrl(), "job queue")
	output(stack, "DlqUrl", queues.DLQ.QueueUrl(), "dead letter queue (replay from here)")
	output(stack, "AlarmTopicArn", alarms.Topic.TopicArn(), "SNS topic every alarm notifies")
	output(stack, "ReconcilerFunctionName", fns.Reconciler.FunctionName(), "scheduled reconciler (re-sends stuck jobs)")
	output(stack, "OperatorPolicyArn", operator.ManagedPolicyArn(), "attach to the operators who run `aijobs failures` and `aijobs replay`")
	output(stack, "CallbackQueueUrl", queues.Callbacks.QueueUrl(), "callback notices (the notifier's queue)")
	output(stack, "CallbackDlqUrl", queues.CallbackDLQ.QueueUrl(), "callback notices given up")
	output(stack, "NotifierFunctionName", fns.Notifier.FunctionName(), "the notifier (delivers callbacks): its log group and metrics")
	output(stack, "WebhookSecretArn", secret.SecretArn(), "the deployment's webhook signing secret (whsec_...): every tenant's key is derived from it; the notifier signs with it and the API's webhook key routes derive each tenant's key from it; never give it to a receiver")
	output(stack, "ParkBucketName", park.BucketName(), "parked outcomes: docs/parking.md")
	output(stack, "PayloadBucketName", payloads.BucketName(), "large inputs, large answers and uploads: docs/payloads.md")
	if fns.Collector != nil {
		output(stack, "CollectorFunctionName", fns.Collector.FunctionName(), "the batch lane's scheduled collector: its log group and metrics")
	}
	if batch != nil {
		output(stack, "BatchBucketName", batch.Bucket.BucketName(), "a Bedrock batch lane's batches (batches/<batch id>/): docs/deploy.md, The collector")
	}
	return stack
}

// Shared are the resources the stack's functions run against: the jobs
// table, the tenants table, the quarantine table, the buckets table
// (rate-limit buckets, tenants' slots, batch records), the queues, the parking bucket, the webhook signing secret and,
// with a batch lane on Bedrock, its bucket and service role (nil
// otherwise). They are built before the functions and travel to the
// function builders together, so each takes one value however many of
// them its function uses.
type Shared struct {
	Table         awsdynamodb.Table
	Tenants       awsdynamodb.Table
	Quarantine    awsdynamodb.Table
	Buckets       awsdynamodb.Table
	Queues        Queues
	Park          awss3.Bucket
	Payloads      awss3.Bucket
	WebhookSecret awssecretsmanager.Secret
	BedrockBatch  *BedrockBatch
}

func output(stack awscdk.Stack, id string, value *string, description string) {
	awscdk.NewCfnOutput(stack, jsii.String(id), &awscdk.CfnOutputProps{Value: value, Description: jsii.String(description)})
}

// seconds converts a settings duration (whole seconds, checked by
// checkAWSLimits) to a CDK duration.
func seconds(d time.Duration) awscdk.Duration {
	return awscdk.Duration_Seconds(jsii.Number(d.Seconds()))
}
