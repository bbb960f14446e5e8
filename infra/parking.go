package main

import (
	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awss3"
	"github.com/aws/jsii-runtime-go"
	"github.com/cdklabs/cdk-nag-go/cdknag/v2"
)

// parkPrefix is where pkg/parking keeps a parked outcome
// (parked/<job id>/<lease owner>, parking.Key). The functions' grants and
// the lifecycle rule cover this prefix only.
const parkPrefix = "parked/"

// parkExpiry is how long a parked outcome may stay. One is read within
// minutes of its attempt's lease ending (by the next worker, or the
// reconciler's DLQ sweep) and deleted once recorded; the rule is the
// backstop for one whose delete failed, long enough that nobody who can
// still settle the job finds its outcome gone.
const parkExpiry = 7 // days

// newParkingBucket is the parking lot (pkg/parking, pkg/s3): the bucket a
// worker writes a paid outcome to when the table keeps refusing its
// finishing write, for whoever finds the attempt dead to record. It holds
// tenants' results, so it is encrypted, private and TLS only, and
// objects are owned by the bucket's account (no ACLs). No versioning: an
// object is written once and deleted once settled, and a version kept
// after that would be a tenant's result kept past its use. No name:
// CloudFormation makes a unique one (bucket names are global), and the
// functions get it from AIJOBS_PARK_BUCKET. Kept with the table (RETAIN
// unless throwaway); no autoDeleteObjects, which would add a custom
// resource and its Lambda to the stack.
func newParkingBucket(stack awscdk.Stack, cfg Config) awss3.Bucket {
	bucket := awss3.NewBucket(stack, jsii.String("ParkBucket"), &awss3.BucketProps{
		Encryption:        awss3.BucketEncryption_S3_MANAGED,
		BlockPublicAccess: awss3.BlockPublicAccess_BLOCK_ALL(),
		EnforceSSL:        jsii.Bool(true),
		Versioned:         jsii.Bool(false),
		ObjectOwnership:   awss3.ObjectOwnership_BUCKET_OWNER_ENFORCED,
		LifecycleRules: &[]*awss3.LifecycleRule{{
			Id:         jsii.String("expire-parked"),
			Prefix:     jsii.String(parkPrefix),
			Expiration: awscdk.Duration_Days(jsii.Number(parkExpiry)),
			// Parked outcomes are single PUTs; a multipart upload left
			// incomplete would be billed storage nobody sees.
			AbortIncompleteMultipartUploadAfter: awscdk.Duration_Days(jsii.Number(1)),
		}},
		RemovalPolicy: removalPolicy(cfg),
	})
	// The TLS-only policy (enforceSSL) stays as long as the bucket: a
	// retained bucket still holds results until the rule expires them.
	bucket.Policy().ApplyRemovalPolicy(removalPolicy(cfg))
	cdknag.NagSuppressions_AddResourceSuppressions(bucket, &[]*cdknag.NagPackSuppression{{
		Id:     jsii.String("AwsSolutions-S1"),
		Reason: jsii.String(parkAccessLogsReason),
	}}, jsii.Bool(false))
	return bucket
}

// parkAccessLogsReason is why the parking bucket has no server access
// logs (cdk-nag AwsSolutions-S1).
const parkAccessLogsReason = "Objects are written only when DynamoDB refuses a worker's finishing write, read once and deleted " +
	"(docs/architecture.md, section Parked outcomes), by the worker and reconciler roles only. CloudTrail data events for S3 can " +
	"audit every request if wanted; server access logs would need a second bucket for almost no traffic."
