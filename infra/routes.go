package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/aijobs/aijobs/pkg/config"
	"github.com/aijobs/aijobs/pkg/settings"
)

// routesVar is the variable the functions read their model routes from.
const routesVar = "AIJOBS_ROUTES"

// lambdaEnvLimit is Lambda's limit on a function's environment: 4 KB for
// every key and value together.
const lambdaEnvLimit = 4096

// loadRoutes returns AIJOBS_ROUTES as the functions get it: the content of
// the file the routesFile context names (relative to the repository root,
// where cdk.json is), or the AIJOBS_ROUTES context, compacted; "" when
// neither is set. A provider that reads its key from an environment
// variable is refused: the only way to give a deployed function that
// variable is to write the key into the template.
func loadRoutes(ctx Lookup) (string, error) {
	file, fromFile := ctx("routesFile")
	text, fromContext := ctx(routesVar)
	var source string
	switch {
	case fromFile && fromContext:
		return "", fmt.Errorf("infra: routesFile and %s are both set: give the routes one way", routesVar)
	case fromFile:
		if !filepath.IsAbs(file) {
			file = filepath.Join(repoRoot(), file)
		}
		b, err := os.ReadFile(file)
		if err != nil {
			return "", fmt.Errorf("infra: routesFile: %w", err)
		}
		text, source = string(b), "routesFile "+file
	case fromContext:
		source = "context " + routesVar
	default:
		return "", nil
	}
	compact, err := config.CompactRoutes(text)
	if err != nil {
		return "", fmt.Errorf("infra: %s: %w", source, err)
	}
	if err := refuseKeyEnv(compact); err != nil {
		return "", fmt.Errorf("infra: %s: %w", source, err)
	}
	return compact, nil
}

// refuseKeyEnv refuses every provider with api_key_env, read from the raw
// document: config.Load only fills ProviderSpec.APIKey when the named
// variable is set, so its result cannot tell.
func refuseKeyEnv(routes string) error {
	var doc struct {
		Providers map[string]struct {
			APIKeyEnv string `json:"api_key_env"`
		} `json:"providers"`
	}
	if err := json.Unmarshal([]byte(routes), &doc); err != nil {
		return fmt.Errorf("not the routes document: %w", err)
	}
	var bad []string
	for name, p := range doc.Providers {
		if p.APIKeyEnv != "" {
			bad = append(bad, fmt.Sprintf("%q (api_key_env %s)", name, p.APIKeyEnv))
		}
	}
	if len(bad) == 0 {
		return nil
	}
	sort.Strings(bad)
	return fmt.Errorf("provider %s: a deployed function cannot read its key from an environment variable without the key being "+
		"written into the template; store the key in Secrets Manager and name it with \"api_key_secret\" (a name or an ARN) instead",
		strings.Join(bad, ", "))
}

// stackEnvSize bounds from above what the stack adds to cfg.Env for any
// function: every variable it sets for one of them (the notifier, which
// gets the most, has all but the buckets table): the table name,
// the two job queue URLs, the parking bucket's name, the two callback
// queue URLs, the signing secret's ARN, the tenants, quarantine and
// buckets tables' names, which are only known at deploy
// (https://sqs.<region>.amazonaws.com[.cn]/<12-digit account>/<name>; the
// longest region name is 14 characters, 16 leaves room; a secret's ARN ends
// in "-" and six random characters; CloudFormation names the bucket, and
// no bucket name is longer than 63 characters).
func stackEnvSize(s settings.Settings) int {
	url := func(name string) int {
		return len("https://sqs.") + 16 + len(".amazonaws.com.cn/") + 12 + len("/") + len(name)
	}
	secretArn := len("arn:aws-cn:secretsmanager:") + 16 + len(":") + 12 + len(":secret:") + len(s.WebhookSecretName()) + len("-123456")
	return len("AIJOBS_TABLE") + len(s.TableName()) +
		len("AIJOBS_QUEUE_URL") + url(s.QueueName()) +
		len("AIJOBS_DLQ_URL") + url(s.DLQName()) +
		len("AIJOBS_PARK_BUCKET") + maxBucketName +
		len("AIJOBS_PAYLOAD_BUCKET") + maxBucketName +
		len("AIJOBS_CALLBACK_QUEUE_URL") + url(s.CallbackQueueName()) +
		len("AIJOBS_CALLBACK_DLQ_URL") + url(s.CallbackDLQName()) +
		len("AIJOBS_WEBHOOK_SECRET_ID") + secretArn +
		len("AIJOBS_TENANTS_TABLE") + len(s.TenantsTableName()) +
		len("AIJOBS_QUARANTINE_TABLE") + len(s.QuarantineTableName()) +
		len("AIJOBS_BUCKETS_TABLE") + len(s.BucketsTableName())
}

// maxBucketName is the longest an S3 bucket name can be (S3 User Guide,
// "General purpose bucket naming rules").
const maxBucketName = 63

// checkEnvSize refuses an environment Lambda would refuse mid-deploy.
func checkEnvSize(c Config) []string {
	size := stackEnvSize(c.Settings) + batchEnvSize(c)
	for k, v := range c.Env {
		size += len(k) + len(v)
	}
	if size <= lambdaEnvLimit {
		return nil
	}
	return []string{fmt.Sprintf("the functions' environment would be about %d bytes (%s alone is %d), above Lambda's %d-byte limit: "+
		"shorten the routes document (fewer routes or providers, shorter names)", size, routesVar, len(c.RoutesJSON), lambdaEnvLimit)}
}
