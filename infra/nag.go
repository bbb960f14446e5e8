package main

import (
	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/jsii-runtime-go"
	"github.com/cdklabs/cdk-nag-go/cdknag/v2"
)

// ApplyNag runs the cdk-nag AwsSolutions rules over everything in the app
// at synth. An unsuppressed finding is an error annotation, which fails
// `cdk synth` and the nag test, so a weaker stack cannot be deployed by
// accident.
//
// The default stack needs few suppressions: the functions have explicit
// roles with no managed policy (IAM4) and no wildcard resource but the
// parking bucket's keys (IAM5: the log group ARN CloudFormation returns
// already ends in ":*" as a token; the "-??????" of a secret ARN is not
// "*"), every route is authorized (APIG4), the stage logs access (APIG1),
// the queues and the topic are encrypted and TLS only (SQS2-4, SNS3), the
// parking bucket is private and TLS only (S2, S10), the key rotates
// (KMS5) and the table has point-in-time recovery (DDB3). Suppressed in
// every stack: no automatic rotation of the webhook signing secret and its
// seed (SMG4, webhookRotationReason), no server access logs on the parking
// bucket (S1, parkAccessLogsReason), and the worker's and the
// reconciler's grants on the bucket's parked/* keys (IAM5 for that
// resource only, parkedWildcardReason).
//
// The other suppressions there can be: with a route on a Bedrock
// inference profile, the worker's role grants that profile's foundation
// model in every Region (IAM5 on
// "arn:...:bedrock:*::foundation-model/<model>"). It is added by
// suppressInferenceProfileWildcards on the worker's CfnRole only, for
// exactly those resources (appliesTo), with inferenceProfileWildcard as
// the reason. With a Bedrock batch lane (bedrockbatch.go): no server
// access logs on its bucket (S1, batchAccessLogsReason), and IAM5 on the
// batch service role and the collector's role for exactly the bucket's
// batches/ keys each uses and the batch jobs (batchKeysWildcardReason)
// and a lane's profile models (batchProfileWildcardReason).
// TestNagSuppressionsArePinned checks that nothing else is suppressed.
func ApplyNag(app awscdk.App) {
	awscdk.Aspects_Of(app).Add(cdknag.NewAwsSolutionsChecks(&cdknag.NagPackProps{Verbose: jsii.Bool(true)}), nil)
}

// inferenceProfileWildcard is why the worker may invoke an inference
// profile's model in any Region (see models.go).
const inferenceProfileWildcard = "A Bedrock cross-Region inference profile sends each call to the model in one of its destination Regions, " +
	"which are not in the profile id and which AWS extends over time; Bedrock authorizes the call against the foundation model " +
	"in that Region, so the docs require an allow on the model in each of them " +
	"(docs.aws.amazon.com/bedrock/latest/userguide/inference-profiles-prereq.html). The wildcard is the Region only, for one " +
	"named model, and the statement holds only for calls through the named profile (condition bedrock:InferenceProfileArn)."
