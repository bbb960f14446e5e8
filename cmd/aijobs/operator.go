package main

import (
	"cmp"
	"context"
	"flag"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/aijobs/aijobs/pkg/awsclient"
	"github.com/aijobs/aijobs/pkg/awsclient/awsconfig"
	"github.com/aijobs/aijobs/pkg/config"
	"github.com/aijobs/aijobs/pkg/dynamodb"
	"github.com/aijobs/aijobs/pkg/sqs"
)

// operator is the AWS side of the operator commands (failures, replay,
// quarantine): the jobs table, the quarantine table and the queues
// themselves, not the HTTP API, named by the variables the functions run
// with (AIJOBS_TABLE or AIJOBS_PREFIX, AIJOBS_QUARANTINE_TABLE,
// AIJOBS_QUEUE_URL, AIJOBS_DLQ_URL, AWS_REGION, AWS_ENDPOINT_URL) or by
// flags. Credentials come from the usual AWS chain; the permissions they
// need are the stack's operator policy (docs/deploy.md).
type operator struct {
	cfg   config.Config
	aws   aws.Config
	store *dynamodb.Store
	queue *sqs.Queue
	// quarantines is the quarantine table (job.Quarantine); a deployment
	// with quarantine off may not have one, and its calls then fail.
	quarantines *dynamodb.Quarantines
}

// awsFlags are the flags that name the tables and queues.
type awsFlags struct{ table, quarantineTable, queueURL, dlqURL string }

// connectOperator is connect for the operator commands: the output
// format, then the table and queues.
func (c *cli) connectOperator(ctx context.Context, f awsFlags) (format string, op *operator, err error) {
	if format, err = c.format(); err != nil {
		return "", nil, err
	}
	op, err = c.operator(ctx, f, nil)
	return format, op, err
}

// operator opens the table and queues named by f and the environment;
// counter, when set, counts every AWS call.
func (c *cli) operator(ctx context.Context, f awsFlags, counter *awsclient.Counter) (*operator, error) {
	cfg, err := config.Load(c.env.getenv)
	if err != nil {
		return nil, usageErrorf("%v", err)
	}
	for dst, v := range map[*string]string{&cfg.Table: f.table, &cfg.QuarantineTable: f.quarantineTable, &cfg.QueueURL: f.queueURL,
		&cfg.DLQURL: f.dlqURL, &cfg.Region: c.g.region} {
		if v != "" {
			*dst = v
		}
	}
	awsCfg, err := awsconfig.Load(ctx, awsclient.Config{Region: cfg.Region, Endpoint: cfg.Endpoint, CallTimeout: cfg.Settings.AWSCallTimeout, Counter: counter})
	if err != nil {
		return nil, usageErrorf("aws configuration: %v", err)
	}
	// No credentials is a configuration error (exit 2), not a failure of
	// the first call.
	if _, err := awsCfg.Credentials.Retrieve(ctx); err != nil {
		return nil, usageErrorf("no AWS credentials for the operator commands (profile, SSO or environment)%s: %v", devHint(cfg), err)
	}
	return &operator{cfg: cfg, aws: awsCfg,
		store:       dynamodb.New(awsclient.DynamoDB(awsCfg), cfg.Table, cfg.Settings),
		quarantines: dynamodb.NewQuarantines(awsclient.DynamoDB(awsCfg), cfg.QuarantineTable),
		queue:       sqs.New(awsclient.SQS(awsCfg), cfg.QueueURL, cfg.DLQURL)}, nil
}

// register adds the table and, with queues, the queue flags to fs.
func (f *awsFlags) register(fs *flag.FlagSet, queues bool) {
	fs.StringVar(&f.table, "table", "", "jobs table (default: AIJOBS_TABLE, else <AIJOBS_PREFIX>-jobs; the stack's TableName output)")
	if queues {
		fs.StringVar(&f.queueURL, "queue-url", "", "job queue URL (default: AIJOBS_QUEUE_URL; the stack's QueueUrl output)")
		fs.StringVar(&f.dlqURL, "dlq-url", "", "dead letter queue URL (default: AIJOBS_DLQ_URL; the stack's DlqUrl output)")
	}
}

// registerQuarantine adds the quarantine table's flag to fs.
func (f *awsFlags) registerQuarantine(fs *flag.FlagSet) {
	fs.StringVar(&f.quarantineTable, "quarantine-table", "", "quarantine table (default: AIJOBS_QUARANTINE_TABLE, else <AIJOBS_PREFIX>-quarantine; the stack's QuarantineTableName output)")
}

// devHint is what a missing credential most often means on a developer's
// machine: the command was meant for the dev server's emulator and went
// to AWS's chain instead, which ends at the instance metadata service.
func devHint(cfg config.Config) string {
	if cfg.Endpoint != "" {
		return ""
	}
	return "; for the table of `make dev`, set AWS_ENDPOINT_URL to its emulator (the dev server's banner prints the whole line: export AWS_ENDPOINT_URL=http://127.0.0.1:4566 ...)"
}

// findQueues fills in queue URLs the flags and environment left out from
// the queues named by the deployment's prefix (AIJOBS_PREFIX), as the dev
// server and the stack name them, so the commands need only the table's
// prefix; a queue not found stays unset for the command to say so.
func (op *operator) findQueues(ctx context.Context) {
	if op.cfg.QueueURL != "" && op.cfg.DLQURL != "" {
		return
	}
	q, dlq := sqs.FindQueues(ctx, awsclient.SQS(op.aws), op.cfg.Settings)
	op.cfg.QueueURL, op.cfg.DLQURL = cmp.Or(op.cfg.QueueURL, q), cmp.Or(op.cfg.DLQURL, dlq)
	op.queue = sqs.New(awsclient.SQS(op.aws), op.cfg.QueueURL, op.cfg.DLQURL)
}
