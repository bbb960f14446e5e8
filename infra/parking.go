package main

import (
	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
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

// parkedObjects is the ARN of every parked outcome: the object grants
// cover these keys and no other key of the bucket.
func parkedObjects(bucket awss3.Bucket) *string {
	return bucket.ArnForObjects(jsii.String(parkPrefix + "*"))
}

// suppressParkedWildcard lets role's grants on parkedObjects pass cdk-nag
// (AwsSolutions-IAM5 flags the "*" of "parked/*"), for that resource
// only: cdk-nag names it by the bucket's logical id, which is fixed by
// the bucket's path, so it is resolved here (cdk-nag compares appliesTo
// unresolved).
func suppressParkedWildcard(stack awscdk.Stack, role awsiam.Role, bucket awss3.Bucket) {
	id, ok := stack.Resolve(stack.GetLogicalId(bucket.Node().DefaultChild().(awscdk.CfnElement))).(string)
	if !ok {
		panic("the parking bucket's logical id does not resolve to a string")
	}
	appliesTo := []any{parkedNagResource(id)}
	cdknag.NagSuppressions_AddResourceSuppressions(role.Node().DefaultChild(), &[]*cdknag.NagPackSuppression{{
		Id:        jsii.String("AwsSolutions-IAM5"),
		Reason:    jsii.String(parkedWildcardReason),
		AppliesTo: &appliesTo,
	}}, jsii.Bool(false))
}

// parkedNagResource is how cdk-nag names parkedObjects of the bucket with
// logical id id.
func parkedNagResource(id string) string {
	return nagResource("${" + id + ".Arn}/" + parkPrefix + "*")
}

// parkedWildcardReason is why a role may call its S3 actions on every key
// under parked/ (cdk-nag AwsSolutions-IAM5).
const parkedWildcardReason = "A parked outcome's key is parked/<job id>/<lease owner> (pkg/parking.Key), made at run time for " +
	"each attempt that parks, so no grant can name it in advance. The wildcard is the key under the parked/ prefix of the " +
	"stack's own parking bucket, and only the object actions each function calls are allowed on it."

// parkAccessLogsReason is why the parking bucket has no server access
// logs (cdk-nag AwsSolutions-S1).
const parkAccessLogsReason = "Objects are written only when DynamoDB refuses a worker's finishing write, read once and deleted " +
	"(docs/architecture.md, section Parked outcomes), by the worker and reconciler roles only. CloudTrail data events for S3 can " +
	"audit every request if wanted; server access logs would need a second bucket for almost no traffic."
