package main

import (
	"math"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awss3"
	"github.com/aws/jsii-runtime-go"
)

// The payload store's prefixes (docs/payloads.md, "Keys"): a job's large
// input (inputs/<job id>/<input hash>), a job's large answer
// (results/...), and what a caller uploads before the create that names
// it (uploads/<tenant digest>/<upload id>).
const (
	inputsPrefix  = "inputs/"
	resultsPrefix = "results/"
	uploadsPrefix = "uploads/"
)

// uploadExpiry is how long an upload stays: its link works 15 minutes
// (api.UploadTTL) and the create that names it copies it to inputs/, so
// a day covers a slow caller; the rule is the only delete an upload gets.
const uploadExpiry = 1 // days

// recordLifeDays is the longest a job record can live: its deadline at
// most (Limits.MaxDeadline) and then its retention (the failed one, the
// longer), plus a week's margin for a replay's or a late settlement's
// writes. An input or answer object is only of use while its record is,
// so it expires then (docs/payloads.md, "Lifecycle").
func recordLifeDays(cfg Config) float64 {
	s := cfg.Settings
	life := s.Limits.MaxDeadline + max(s.Retention.Failed, s.Retention.Succeeded)
	return math.Ceil(life.Hours()/24) + 7
}

// newPayloadBucket is the payload store (pkg/s3's Payloads): a private
// bucket of tenants' inputs and answers, each prefix under its own
// expiry, so nothing a record no longer points at stays. The functions
// get its name from AIJOBS_PAYLOAD_BUCKET.
func newPayloadBucket(stack awscdk.Stack, cfg Config) awss3.Bucket {
	life := recordLifeDays(cfg)
	return newPrivateBucket(stack, cfg, bucketSpec{
		ID: "PayloadBucket", RuleID: "expire-inputs", Prefix: inputsPrefix, ExpiryDays: life, AccessLogsReason: payloadAccessLogsReason,
		More: []expiry{{ID: "expire-results", Prefix: resultsPrefix, Days: life}, {ID: "expire-uploads", Prefix: uploadsPrefix, Days: uploadExpiry}},
	})
}

// payloadObjects is the ARN of every key under prefix of the bucket.
func payloadObjects(bucket awss3.Bucket, prefix string) *string {
	return bucket.ArnForObjects(jsii.String(prefix + "*"))
}

// suppressPayloadWildcards lets role's grants on the payload bucket's
// prefixes pass cdk-nag (AwsSolutions-IAM5), for those keys only.
func suppressPayloadWildcards(stack awscdk.Stack, role awsiam.Role, bucket awss3.Bucket, prefixes ...string) {
	id := logicalID(stack, bucket)
	appliesTo := make([]string, len(prefixes))
	for i, p := range prefixes {
		appliesTo[i] = objectsNagResource(id, p+"*")
	}
	suppressWildcards(role, payloadWildcardReason, appliesTo...)
}

// The payload store's grants (docs/payloads.md, "Grants"), least
// privilege by prefix. The API writes a large input (PutObject on
// inputs/), signs upload links (a presigned PUT acts with the signer's
// permissions, so it holds PutObject on uploads/), reads an upload a
// create names (GetObject on uploads/) and signs links to large answers
// (GetObject on results/). The worker reads inputs and writes answers;
// the collector reads inputs and writes a batch's large answers; the
// notifier signs answer links. ListBucket
// on the bucket makes a missing key a 404, not a 403 (S3 API Reference,
// GetObject, Permissions): a missing upload is the caller's 422, a
// missing input the job's end, never a store "unavailable".
var (
	apiPayloadPut      = []string{"s3:PutObject"}
	payloadGet         = []string{"s3:GetObject"}
	workerPayloadPut   = []string{"s3:PutObject"}
	payloadListActions = []string{"s3:ListBucket"}
)

// apiPayloadStatements are the API's grants on the payload bucket.
func apiPayloadStatements(b awss3.Bucket) []awsiam.PolicyStatement {
	return []awsiam.PolicyStatement{
		allow(apiPayloadPut, payloadObjects(b, inputsPrefix)),
		allow(apiPayloadPut, payloadObjects(b, uploadsPrefix)),
		allow(payloadGet, payloadObjects(b, uploadsPrefix)),
		allow(payloadGet, payloadObjects(b, resultsPrefix)),
		allow(payloadListActions, b.BucketArn()),
	}
}

// workerPayloadStatements are the worker's grants on the payload bucket.
func workerPayloadStatements(b awss3.Bucket) []awsiam.PolicyStatement {
	return []awsiam.PolicyStatement{
		allow(payloadGet, payloadObjects(b, inputsPrefix)),
		allow(workerPayloadPut, payloadObjects(b, resultsPrefix)),
		allow(payloadListActions, b.BucketArn()),
	}
}

// payloadWildcardReason is why a role may call its S3 actions on every
// key under a payload prefix (cdk-nag AwsSolutions-IAM5).
const payloadWildcardReason = "A payload's key is made at run time from a job id and a digest, or an upload's random id " +
	"(inputs/<job id>/<input hash>, results/..., uploads/<tenant digest>/<upload id>), so no grant can name it in advance. " +
	"The wildcard is the keys under one prefix of the stack's own payload bucket, and only the object actions each function calls are allowed on it."

// payloadAccessLogsReason is why the payload bucket has no server access
// logs (cdk-nag AwsSolutions-S1).
const payloadAccessLogsReason = "Objects are written by the stack's own functions (and by callers through links the API signs " +
	"for one key, one size, 15 minutes) and each is read by the job it belongs to; every job's reads and writes are in the functions' logs."
