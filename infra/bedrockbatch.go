package main

import (
	"fmt"
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awss3"
	"github.com/aws/jsii-runtime-go"

	"github.com/aijobs/aijobs/pkg/config"
	"github.com/aijobs/aijobs/pkg/job"
)

// A Bedrock batch lane's batches are model invocation jobs over files in
// S3 (docs/lanes.md, "The providers' batch wires"; docs/deploy.md,
// "The collector"). The collector (pkg/model/bedrock) writes a batch's
// Converse requests to batches/<batch id>/input.jsonl in the batch
// bucket, makes the job (CreateModelInvocationJob, naming the service
// role and its output, batches/<batch id>/output/), polls it
// (GetModelInvocationJob) and, once it ended, lists and reads what
// Bedrock wrote under batches/<batch id>/output/<job id>/. Bedrock itself,
// as the service role, reads the input and writes the output. So the
// stack makes, only when a route offers a batch lane on a bedrock
// provider: the bucket, the service role, and the collector's grants
// (collectorStatements). The worker, which never submits a batch, gets
// none of it.

// batchesPrefix is where pkg/model/bedrock keeps every file of a batch;
// the lifecycle rule and every grant cover this prefix only.
const batchesPrefix = "batches/"

// The keys the collector writes (each batch's input) and reads (what
// Bedrock wrote under the batch's output prefix), and the prefix it lists.
const (
	batchInputKeys  = batchesPrefix + "*/input.jsonl"
	batchOutputKeys = batchesPrefix + "*/output/*"
)

// batchesExpiry is how long a batch's files stay. A batch's job runs at
// most 24 hours (its timeout, pkg/model/bedrock) and the next collector
// runs settle its results within minutes of its end; the rest is room for
// a collector that was failing (CollectorErrors) to be fixed and still
// settle answers at their real cost, and for an operator to look at a
// batch. Past that the files are tenants' prompts and answers kept past
// their use.
const batchesExpiry = 30 // days

// modelInvocationJobs are the stack's Region's and account's batch
// inference jobs: a job's id is made by Bedrock when it is created, so no
// grant can name it in advance.
const modelInvocationJobs = "arn:${AWS::Partition}:bedrock:${AWS::Region}:${AWS::AccountId}:model-invocation-job/*"

// bedrockPrincipal is the service that assumes the batch service role,
// and the only one the collector may pass it to.
const bedrockPrincipal = "bedrock.amazonaws.com"

var (
	// The service role: Bedrock reads a batch's input, writes its output
	// and lists the bucket, and invokes an inference profile's models for
	// a batch named by the profile.
	batchRoleObjectActions = []string{"s3:GetObject", "s3:PutObject"}
	batchListActions       = []string{"s3:ListBucket"}
	batchRoleInvokeActions = []string{"bedrock:InvokeModel"}
	// The collector: makes a batch's job and polls it, passes the service
	// role to Bedrock, writes a batch's input, reads and lists its output.
	collectorCreateActions = []string{"bedrock:CreateModelInvocationJob"}
	collectorPollActions   = []string{"bedrock:GetModelInvocationJob"}
	collectorPassActions   = []string{"iam:PassRole"}
	collectorInputActions  = []string{"s3:PutObject"}
	collectorOutputActions = []string{"s3:GetObject"}
)

// BedrockBatch is what a Bedrock batch lane runs on: its bucket, the
// service role Bedrock assumes, and the models the Bedrock batch lanes
// name (as bedrockModels derives them).
type BedrockBatch struct {
	Bucket awss3.Bucket
	Role   awsiam.Role
	Models modelGrants
}

// bedrockBatchProviders are the bedrock providers a batch lane calls.
func bedrockBatchProviders(c Config) []string {
	return config.Config{Providers: c.Providers, Routes: c.Routes}.BedrockBatchProviders()
}

// newBedrockBatch is the bucket and the service role of the Bedrock batch
// lanes, and the rule holding their providers to the stack's Region; nil
// when no route offers a batch lane on a bedrock provider.
func newBedrockBatch(stack awscdk.Stack, cfg Config) *BedrockBatch {
	if len(bedrockBatchProviders(cfg)) == 0 {
		return nil
	}
	// The lanes' models: checked by LoadConfig (checkModelAccess), since
	// a batch lane calls its rung's model.
	models, errs := bedrockModels(cfg, func(g job.Rung) (job.Rung, bool) { return g.InLane(job.Batch) })
	if len(errs) > 0 {
		panic(strings.Join(errs, "; "))
	}
	b := &BedrockBatch{Models: models, Bucket: newPrivateBucket(stack, cfg, bucketSpec{
		ID: "BatchBucket", RuleID: "expire-batches", Prefix: batchesPrefix, ExpiryDays: batchesExpiry, AccessLogsReason: batchAccessLogsReason,
	})}
	b.Role = newBatchServiceRole(stack, b)
	newBatchRegionRule(stack, cfg)
	return b
}

// newBatchServiceRole is the role Bedrock assumes to run a batch: only
// Bedrock, only for this account's batch inference jobs in the stack's
// Region (aws:SourceAccount, aws:SourceArn: the confused-deputy
// conditions), and it may only read, write and list the batch bucket's
// batches/ (in this account: aws:ResourceAccount) and invoke the
// inference profiles the batch lanes name with their models in each of
// their Regions; a foundation model named directly needs nothing more
// (docs/deploy.md, "The collector"; infrastructure tests name the AWS
// pages each condition follows). ListBucket carries no s3:prefix
// condition: which prefix Bedrock lists with is not documented.
func newBatchServiceRole(stack awscdk.Stack, b *BedrockBatch) awsiam.Role {
	ours := map[string]any{"StringEquals": map[string]any{"aws:ResourceAccount": awscdk.Aws_ACCOUNT_ID()}}
	statements := []awsiam.PolicyStatement{
		allowIf(batchRoleObjectActions, b.Bucket.ArnForObjects(jsii.String(batchesPrefix+"*")), ours),
		allowIf(batchListActions, b.Bucket.BucketArn(), ours),
	}
	for _, p := range b.Models.Profiles {
		statements = append(statements, awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
			Actions: jsii.Strings(batchRoleInvokeActions...), Resources: arns(append([]string{p.Profile}, p.Models...)),
		}))
	}
	role := awsiam.NewRole(stack, jsii.String("BatchServiceRole"), &awsiam.RoleProps{
		AssumedBy: awsiam.NewServicePrincipal(jsii.String(bedrockPrincipal), &awsiam.ServicePrincipalOpts{Conditions: &map[string]any{
			"StringEquals": map[string]any{"aws:SourceAccount": awscdk.Aws_ACCOUNT_ID()},
			"ArnLike":      map[string]any{"aws:SourceArn": arn(modelInvocationJobs)},
		}}),
		Description: jsii.String("aijobs Bedrock batch lane: what Bedrock may do running a batch (read its input, write its output)"),
		InlinePolicies: &map[string]awsiam.PolicyDocument{
			"least-privilege": awsiam.NewPolicyDocument(&awsiam.PolicyDocumentProps{Statements: &statements}),
		},
	})
	suppressWildcards(role, batchKeysWildcardReason, objectsNagResource(logicalID(stack, b.Bucket), batchesPrefix+"*"))
	suppressModelWildcards(role, b.Models.wildcards())
	return role
}

// collectorStatements are what the collector calls on a Bedrock batch
// lane, and nothing else: CreateModelInvocationJob on the stack's
// Region's jobs and the lanes' models (the job and the foundation model;
// a profile's lane gets the profile and its models in every Region, which
// the call may be authorized against, as the worker's InvokeModel is),
// GetModelInvocationJob on the jobs, PassRole on the service role to
// Bedrock only, PutObject on each batch's input, GetObject on the output
// Bedrock wrote, and ListBucket only under an output prefix (it lists no
// other).
func (b *BedrockBatch) collectorStatements() []awsiam.PolicyStatement {
	create := map[string]bool{modelInvocationJobs: true}
	for _, m := range b.Models.Invoke {
		create[m] = true
	}
	for _, p := range b.Models.Profiles {
		for _, m := range p.Models {
			create[m] = true
		}
	}
	return []awsiam.PolicyStatement{
		awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{Actions: jsii.Strings(collectorCreateActions...), Resources: arns(sortedKeys(create))}),
		allow(collectorPollActions, arn(modelInvocationJobs)),
		allowIf(collectorPassActions, b.Role.RoleArn(), map[string]any{"StringEquals": map[string]any{"iam:PassedToService": bedrockPrincipal}}),
		allow(collectorInputActions, b.Bucket.ArnForObjects(jsii.String(batchInputKeys))),
		allow(collectorOutputActions, b.Bucket.ArnForObjects(jsii.String(batchOutputKeys))),
		allowIf(batchListActions, b.Bucket.BucketArn(), map[string]any{"StringLike": map[string]any{"s3:prefix": batchOutputKeys}}),
	}
}

// suppressCollectorWildcards lets the collector's grants on the batch
// bucket's keys, on the jobs and on the profiles' models in every Region
// pass cdk-nag (AwsSolutions-IAM5), each resource by name.
func (b *BedrockBatch) suppressCollectorWildcards(stack awscdk.Stack, role awsiam.Role) {
	bucket := logicalID(stack, b.Bucket)
	suppressWildcards(role, batchKeysWildcardReason,
		objectsNagResource(bucket, batchInputKeys), objectsNagResource(bucket, batchOutputKeys), nagResource(modelInvocationJobs))
	suppressModelWildcards(role, b.Models.wildcards())
}

// suppressModelWildcards lets role's grants on the inference profiles'
// models in every Region (modelGrants.wildcards) pass cdk-nag
// (AwsSolutions-IAM5), each model by name; none when no lane names a
// profile.
func suppressModelWildcards(role awsiam.Role, wildcards []string) {
	set := map[string]bool{}
	for _, m := range wildcards {
		set[nagResource(m)] = true
	}
	if len(set) > 0 {
		suppressWildcards(role, batchProfileWildcardReason, sortedKeys(set)...)
	}
}

// newBatchRegionRule holds the stack to the Region a Bedrock batch lane's
// provider names, when it names one: the collector calls Bedrock, and the
// batch bucket, in the provider's Region (pkg/app/providers, batchOf),
// while the stack makes the bucket, and grants the jobs, in its own. The
// stack knows its Region only at deploy, so CloudFormation checks it
// before it creates anything. (checkBedrockBatch refuses two Regions at
// synth.)
func newBatchRegionRule(stack awscdk.Stack, cfg Config) {
	var assertions []*awscdk.CfnRuleAssertion
	for _, r := range bedrockBatchRegions(cfg) {
		assertions = append(assertions, &awscdk.CfnRuleAssertion{
			Assert: awscdk.Fn_ConditionEquals(awscdk.Aws_REGION(), jsii.String(r)),
			AssertDescription: jsii.String(fmt.Sprintf("A Bedrock batch lane's provider names region %s: deploy the stack there, "+
				"where it makes the batch bucket, or leave the provider's region unset (docs/deploy.md, The collector)", r)),
		})
	}
	if len(assertions) > 0 {
		awscdk.NewCfnRule(stack, jsii.String("BedrockBatchRegion"), &awscdk.CfnRuleProps{Assertions: &assertions})
	}
}

// bedrockBatchRegions are the Regions the Bedrock batch lanes' providers
// name, sorted, each once.
func bedrockBatchRegions(c Config) []string {
	regions := map[string]bool{}
	for _, name := range bedrockBatchProviders(c) {
		if r := c.Providers[name].Region; r != "" {
			regions[r] = true
		}
	}
	return sortedKeys(regions)
}

// checkBedrockBatch refuses Bedrock batch lanes whose providers name two
// Regions: the stack makes one batch bucket, in its own Region.
func checkBedrockBatch(c Config) []string {
	if r := bedrockBatchRegions(c); len(r) > 1 {
		return []string{fmt.Sprintf("the Bedrock batch lanes' providers name regions %s: the stack makes one batch bucket, in its own "+
			"Region, so they must all be in it (leave region unset, or name the stack's)", strings.Join(r, ", "))}
	}
	return nil
}

// batchEnvSize bounds from above what the stack adds to every function's
// environment for a Bedrock batch lane (functionsEnv): the bucket's name
// and the service role's ARN (a role name CloudFormation makes is at most
// 64 characters; 16 for the partition leaves room); 0 without one.
func batchEnvSize(c Config) int {
	if len(bedrockBatchProviders(c)) == 0 {
		return 0
	}
	roleArn := len("arn:") + 16 + len(":iam::") + 12 + len(":role/") + 64
	return len("AIJOBS_BATCH_BUCKET") + maxBucketName + len("AIJOBS_BATCH_ROLE_ARN") + roleArn
}

// allowIf is one Allow statement on one resource, under conditions.
func allowIf(actions []string, resource *string, conditions map[string]any) awsiam.PolicyStatement {
	return awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Actions:    jsii.Strings(actions...),
		Resources:  &[]*string{resource},
		Conditions: &conditions,
	})
}

// batchKeysWildcardReason is why the service role and the collector may
// act on every key under batches/ of the batch bucket, and the collector
// on every batch inference job of the stack's Region (cdk-nag
// AwsSolutions-IAM5).
const batchKeysWildcardReason = "A batch's files are batches/<batch id>/input.jsonl and batches/<batch id>/output/<job id>/... " +
	"(pkg/model/bedrock), and its model invocation job's id is made by Bedrock: all of them at run time, so no grant can " +
	"name them in advance. The wildcards are the keys under batches/ of the stack's own batch bucket (the collector: only " +
	"the input it writes and the output it reads) and this account's jobs in the stack's Region, with only the actions each " +
	"role calls."

// batchProfileWildcardReason is why the service role may invoke, and the
// collector make a job on, an inference profile's model in any Region
// (cdk-nag AwsSolutions-IAM5).
const batchProfileWildcardReason = "A Bedrock batch lane on a cross-Region inference profile runs its job on the profile's model " +
	"in the profile's destination Regions, which are not in the profile id and which AWS extends over time; the Bedrock User " +
	"Guide asks for the profile and the model in each of its Regions (Create a custom service role for batch inference). The " +
	"wildcard is the Region only, for one named model; only Bedrock may assume the service role, for this account's batch " +
	"jobs, and the collector may make jobs in the stack's Region only."

// batchAccessLogsReason is why the batch bucket has no server access logs
// (cdk-nag AwsSolutions-S1).
const batchAccessLogsReason = "Only the collector role and the Bedrock batch service role may use it, each on batches/ only; " +
	"a batch is one input write, one job's output and one read of it (docs/deploy.md, section The collector). CloudTrail " +
	"data events for S3 can audit every request if wanted; server access logs would need a second bucket for little traffic."
