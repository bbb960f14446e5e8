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
// tenants' results, so it is a privateBucket; the functions get its name
// from AIJOBS_PARK_BUCKET.
func newParkingBucket(stack awscdk.Stack, cfg Config) awss3.Bucket {
	return newPrivateBucket(stack, cfg, bucketSpec{
		ID: "ParkBucket", RuleID: "expire-parked", Prefix: parkPrefix, ExpiryDays: parkExpiry, AccessLogsReason: parkAccessLogsReason,
	})
}

// bucketSpec is what tells one of the stack's private buckets from the
// other: its construct id, its one lifecycle rule (id, the key prefix
// every object of it is under, the days after which they expire) and why
// it has no server access logs.
type bucketSpec struct {
	ID, RuleID, Prefix string
	ExpiryDays         float64
	AccessLogsReason   string
	// More are further prefixes' rules (the payload bucket's).
	More []expiry
}

// expiry is a lifecycle rule: the objects under Prefix expire after Days.
type expiry struct {
	ID, Prefix string
	Days       float64
}

// newPrivateBucket is a bucket of tenants' data (the parking lot, a
// Bedrock batch lane's batches): encrypted (SSE-S3), private and TLS only,
// objects owned by the bucket's account (no ACLs). No versioning: an
// object is written once and deleted or expired once of no use, and a
// version kept after that would be a tenant's data kept past its use. No
// name: CloudFormation makes a unique one (bucket names are global), and
// the functions get it from their environment. Kept with the table
// (RETAIN unless throwaway); no autoDeleteObjects, which would add a
// custom resource and its Lambda to the stack. No server access logs
// (cdk-nag S1, suppressed with spec's reason).
func newPrivateBucket(stack awscdk.Stack, cfg Config, spec bucketSpec) awss3.Bucket {
	rules := []*awss3.LifecycleRule{}
	for _, e := range append([]expiry{{ID: spec.RuleID, Prefix: spec.Prefix, Days: spec.ExpiryDays}}, spec.More...) {
		rules = append(rules, &awss3.LifecycleRule{
			Id:         jsii.String(e.ID),
			Prefix:     jsii.String(e.Prefix),
			Expiration: awscdk.Duration_Days(jsii.Number(e.Days)),
			// A multipart upload left incomplete would be billed storage
			// nobody sees.
			AbortIncompleteMultipartUploadAfter: awscdk.Duration_Days(jsii.Number(1)),
		})
	}
	bucket := awss3.NewBucket(stack, jsii.String(spec.ID), &awss3.BucketProps{
		Encryption:        awss3.BucketEncryption_S3_MANAGED,
		BlockPublicAccess: awss3.BlockPublicAccess_BLOCK_ALL(),
		EnforceSSL:        jsii.Bool(true),
		Versioned:         jsii.Bool(false),
		ObjectOwnership:   awss3.ObjectOwnership_BUCKET_OWNER_ENFORCED,
		LifecycleRules:    &rules,
		RemovalPolicy:     removalPolicy(cfg),
	})
	// The TLS-only policy (enforceSSL) stays as long as the bucket: a
	// retained bucket still holds tenants' data until the rule expires it.
	bucket.Policy().ApplyRemovalPolicy(removalPolicy(cfg))
	cdknag.NagSuppressions_AddResourceSuppressions(bucket, &[]*cdknag.NagPackSuppression{{
		Id:     jsii.String("AwsSolutions-S1"),
		Reason: jsii.String(spec.AccessLogsReason),
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
// only.
func suppressParkedWildcard(stack awscdk.Stack, role awsiam.Role, bucket awss3.Bucket) {
	suppressWildcards(role, parkedWildcardReason, parkedNagResource(logicalID(stack, bucket)))
}

// suppressWildcards lets role's grants on exactly the resources
// appliesTo (as cdk-nag names them: nagResource) pass cdk-nag's
// AwsSolutions-IAM5, for reason.
func suppressWildcards(role awsiam.Role, reason string, appliesTo ...string) {
	list := make([]any, len(appliesTo))
	for i, r := range appliesTo {
		list[i] = r
	}
	cdknag.NagSuppressions_AddResourceSuppressions(role.Node().DefaultChild(), &[]*cdknag.NagPackSuppression{{
		Id:        jsii.String("AwsSolutions-IAM5"),
		Reason:    jsii.String(reason),
		AppliesTo: &list,
	}}, jsii.Bool(false))
}

// logicalID is bucket's logical id: cdk-nag names a bucket's ARN by it,
// and it is fixed by the bucket's path, so it is resolved here (cdk-nag
// compares appliesTo unresolved).
func logicalID(stack awscdk.Stack, bucket awss3.Bucket) string {
	id, ok := stack.Resolve(stack.GetLogicalId(bucket.Node().DefaultChild().(awscdk.CfnElement))).(string)
	if !ok {
		panic("a bucket's logical id does not resolve to a string")
	}
	return id
}

// parkedNagResource is how cdk-nag names parkedObjects of the bucket with
// logical id id.
func parkedNagResource(id string) string {
	return objectsNagResource(id, parkPrefix+"*")
}

// objectsNagResource is how cdk-nag names the objects keys (a pattern)
// of the bucket with logical id id.
func objectsNagResource(id, keys string) string {
	return nagResource("${" + id + ".Arn}/" + keys)
}

// parkedWildcardReason is why a role may call its S3 actions on every key
// under parked/ (cdk-nag AwsSolutions-IAM5).
const parkedWildcardReason = "A parked outcome's key is parked/<job id>/<lease owner> (pkg/parking.Key), made at run time for " +
	"each attempt that parks, so no grant can name it in advance. The wildcard is the key under the parked/ prefix of the " +
	"stack's own parking bucket, and only the object actions each function calls are allowed on it."

// parkAccessLogsReason is why the parking bucket has no server access
// logs (cdk-nag AwsSolutions-S1).
const parkAccessLogsReason = "Objects are written only when DynamoDB refuses a worker's finishing write, read once and deleted " +
	"(docs/parking.md), by the worker and reconciler roles only. CloudTrail data events for S3 can " +
	"audit every request if wanted; server access logs would need a second bucket for almost no traffic."
