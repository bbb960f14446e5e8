package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/jsii-runtime-go"

	"github.com/aijobs/aijobs/pkg/job"
)

// What the batch lane's collector calls (docs/lanes.md, "The batch
// lane"; pkg/collector over pkg/dynamodb and pkg/sqs), and nothing else:
//   - the jobs table: it reads a job (GetItem, consistent) and moves it
//     through the lane with the store's conditional transitions, collect,
//     succeed, release and end, each one UpdateItem (a refused one reads
//     the record back with GetItem); never PutItem, never a scan;
//   - the enlisted index: the jobs waiting in each batch lane (Query), and
//     no other index;
//   - the buckets table, where its batch records live: PutItem opens and
//     saves a record (each conditional), GetItem reads the list of open
//     batches and each record, UpdateItem adds to and takes from that list;
//   - the job queue: SendMessage, for a job it hands back to the queue
//     (its message was deleted when the job was enlisted);
//   - the keys of the providers its batch lanes call (collectorSecrets);
//   - with a batch lane on Bedrock, the batch inference jobs, the batch
//     bucket's batches and the service role (collectorStatements).
//
// Nothing of the DLQ, the parking bucket, the tenants and quarantine
// tables, the signing secret, or Bedrock's models for anything but
// making a batch's job.
var (
	collectorTableActions   = []string{"dynamodb:GetItem", "dynamodb:UpdateItem"}
	collectorIndexActions   = []string{"dynamodb:Query"}
	collectorBatchesActions = []string{"dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem"}
	collectorQueueActions   = []string{"sqs:SendMessage"}
)

// collectorConcurrency is the collector's reserved concurrency: one run
// at a time. Two at once would both carry the same open batches on: a
// batch still collecting could be submitted twice (the provider
// deduplicates on the batch's id only where it can: docs/decisions.md,
// "The batch lane's design"), and every poll and read would be paid
// twice. With one, every run also lands in the same execution
// environment while it lives, which the fake provider's batches, kept in
// memory, need. Its timeout is below its period (checkCollector), so a
// run has ended when the next is due and none is throttled.
const collectorConcurrency = 1

// newCollector is the batch lane's collector function and the schedule
// that runs it every CollectEvery, only when a route offers a batch lane
// (without one, it would have nothing to collect), with a role for
// exactly what it calls. Besides the shared environment it gets the
// buckets table, where its batch records are.
func newCollector(stack awscdk.Stack, cfg Config, sh Shared, env map[string]*string, f *Functions) {
	if !job.AnyBatchLane(cfg.Routes) {
		return
	}
	s := cfg.Settings
	// The lanes' keys: computed (and checked) by LoadConfig.
	secrets, errs := collectorSecrets(cfg)
	if len(errs) > 0 {
		panic(strings.Join(errs, "; "))
	}
	statements := []awsiam.PolicyStatement{
		allow(collectorTableActions, sh.Table.TableArn()),
		allow(collectorIndexActions, indexArn(sh.Table, s.EnlistedIndex)),
		allowIf(collectorBatchesActions, sh.Buckets.TableArn(), leadingKeys(collectorBucketsKeys)),
		allow(collectorQueueActions, sh.Queues.Jobs.QueueArn()),
		// A large input is in the payload store, and a large answer is
		// put there before its succeed (docs/payloads.md, "Answers").
		allow(payloadGet, payloadObjects(sh.Payloads, inputsPrefix)),
		allow(workerPayloadPut, payloadObjects(sh.Payloads, resultsPrefix)),
		allow(payloadListActions, sh.Payloads.BucketArn()),
	}
	if len(secrets) > 0 {
		statements = append(statements, secretStatement(secrets))
	}
	if sh.BedrockBatch != nil {
		statements = append(statements, sh.BedrockBatch.collectorStatements()...)
	}
	f.CollectorLogs = newLogGroup(stack, "CollectorLogs", cfg)
	role := newRole(stack, "CollectorRole", "aijobs collector function: submit, poll and settle the batch lane's batches", f.CollectorLogs,
		statements...)
	if sh.BedrockBatch != nil {
		sh.BedrockBatch.suppressCollectorWildcards(stack, role)
	}
	suppressPayloadWildcards(stack, role, sh.Payloads, inputsPrefix, resultsPrefix)
	f.Collector = goFunction(stack, cfg, functionSpec{
		ID: "Collector", Name: "collector",
		Description: fmt.Sprintf("aijobs collector: every %s, submits, polls and settles the batch lane's batches", s.CollectEvery),
		AssetDir:    cfg.CollectorAssetDir, MemoryMB: s.CollectorMemoryMB, Timeout: s.CollectorTimeout, Role: role, Logs: f.CollectorLogs,
		Env:                 withEnv(env, map[string]*string{"AIJOBS_BUCKETS_TABLE": sh.Buckets.TableName()}),
		ReservedConcurrency: jsii.Number(collectorConcurrency),
		// The schedule is the retry, as for the reconciler: the next run
		// carries every batch on from its record. A run Lambda could not
		// start within a period is dropped: the next one is due by then.
		RetryAttempts: jsii.Number(0),
		MaxEventAge:   min(s.CollectEvery, maxAsyncEventAge),
	})
	f.CollectSchedule = newSchedule(stack, cfg, f.Collector, scheduleSpec{
		ID: "CollectSchedule", Name: "collect", What: "run the batch lane's collector", Every: s.CollectEvery,
	})
}

// maxAsyncEventAge is the longest Lambda keeps an asynchronous event (its
// MaximumEventAgeInSeconds, 60 to 21600).
const maxAsyncEventAge = 6 * time.Hour

// collectorSecrets are the keys the collector reads: those of the
// providers the batch lanes call (job.BatchLaneProviders, the only
// providers its function builds), not every provider's as the worker's.
func collectorSecrets(c Config) (secrets, errs []string) {
	return keySecrets(c, job.BatchLaneProviders(c.Routes))
}

// checkCollector refuses, when a route offers a batch lane, a collector
// period EventBridge cannot schedule and a timeout that would let a run
// outlast its period: with one run at a time (collectorConcurrency) the
// next would be throttled, and a collector that runs late hands jobs
// back late.
func checkCollector(c Config) []string {
	s := c.Settings
	if !job.AnyBatchLane(c.Routes) {
		return nil
	}
	var errs []string
	if s.CollectEvery%time.Minute != 0 || s.CollectEvery < time.Minute {
		errs = append(errs, fmt.Sprintf("collect every %s: an EventBridge rate schedule wants whole minutes, at least 1m", s.CollectEvery))
	}
	if s.CollectorTimeout >= s.CollectEvery {
		errs = append(errs, fmt.Sprintf("collector timeout %s must be below the collector's period %s (AIJOBS_COLLECT_EVERY): a run must end before the next is due",
			s.CollectorTimeout, s.CollectEvery))
	}
	return errs
}
