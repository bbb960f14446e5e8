package main

import (
	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/jsii-runtime-go"
)

// What the operator CLI's `failures`, `replay`, `advise --from-table` and
// `console` commands call (docs/architecture.md, "What each function may
// call"): query the failure index and (the console's jobs page) the tenant
// index; read a job and make replay's recorded transition back to queued or
// the console's cancel; query the created index for a sample of finished
// jobs' run times, or (the console's overview) the recent jobs, and the
// active index for the unfinished ones older than those; take job ids off
// the DLQ; send them through the claim path on the job queue; read both
// queues' depths, and find them by name (the console, given only the
// prefix). Nothing scans the table.
var (
	operatorIndexActions = []string{"dynamodb:Query"}
	operatorTableActions = []string{"dynamodb:GetItem", "dynamodb:UpdateItem"}
	// `aijobs quarantine list` and the console's quarantine page read one
	// tenant's (Query) or every tenant's (Scan of the quarantine table,
	// which holds only quarantines); lift deletes one.
	operatorQuarantineActions = []string{"dynamodb:Query", "dynamodb:Scan", "dynamodb:DeleteItem"}
	operatorDLQActions        = []string{"sqs:ReceiveMessage", "sqs:DeleteMessage", "sqs:ChangeMessageVisibility", "sqs:GetQueueAttributes", "sqs:GetQueueUrl"}
	operatorQueueActions      = []string{"sqs:SendMessage", "sqs:GetQueueAttributes", "sqs:GetQueueUrl"}
	// The console's Spend page reads each tenant's balance parts
	// (docs/spend.md), and nothing else of the buckets table.
	operatorSpendActions = []string{"dynamodb:GetItem"}
	operatorSpendKeys    = []string{"tenant#spend#*"}
)

// newOperatorPolicy is a customer managed policy with exactly what
// `aijobs failures` and `aijobs replay` need. The stack attaches it to
// nobody: an account administrator attaches it to the operators' role,
// group or user (docs/deploy.md, "Operators: failures and replay").
func newOperatorPolicy(stack awscdk.Stack, cfg Config, sh Shared) awsiam.ManagedPolicy {
	s, table, q := cfg.Settings, sh.Table, sh.Queues
	return awsiam.NewManagedPolicy(stack, jsii.String("OperatorPolicy"), &awsiam.ManagedPolicyProps{
		// IAM names are account-wide: with the Region in it, the stack can
		// deploy to a second Region of the same account.
		ManagedPolicyName: jsii.String(s.Prefix + "-operator-" + *stack.Region()),
		Description:       jsii.String("aijobs operators: list failed jobs (failures) and replay them or dead letters (replay); the console, tenants' spend"),
		Statements: &[]awsiam.PolicyStatement{
			allow(operatorIndexActions, indexArn(table, s.FailureIndex)),
			allow(operatorIndexActions, indexArn(table, s.TenantIndex)),
			allow(operatorIndexActions, indexArn(table, s.CreatedIndex)),
			allow(operatorIndexActions, indexArn(table, s.ActiveIndex)),
			allow(operatorTableActions, table.TableArn()),
			allow(operatorQuarantineActions, sh.Quarantine.TableArn()),
			allow(operatorDLQActions, q.DLQ.QueueArn()),
			allow(operatorQueueActions, q.Jobs.QueueArn()),
			allowIf(operatorSpendActions, sh.Buckets.TableArn(), leadingKeys(operatorSpendKeys)),
		},
	})
}
