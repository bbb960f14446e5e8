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
// The stack needs no suppressions today: the functions have explicit
// roles with no managed policy (IAM4) and no wildcard resource (IAM5, the
// log group ARN CloudFormation returns already ends in ":*" as a token),
// every route is authorized (APIG4), the stage logs access (APIG1), the
// queues and the topic are encrypted and TLS only (SQS2-4, SNS3), the
// key rotates (KMS5) and the table has point-in-time recovery (DDB3). A
// future suppression goes on the narrowest construct with
// cdknag.NagSuppressions_AddResourceSuppressions, naming the rule id and
// the reason, and the nag test lists it.
func ApplyNag(app awscdk.App) {
	awscdk.Aspects_Of(app).Add(cdknag.NewAwsSolutionsChecks(&cdknag.NagPackProps{Verbose: jsii.Bool(true)}), nil)
}
