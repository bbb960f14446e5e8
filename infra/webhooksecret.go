package main

import (
	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssecretsmanager"
	"github.com/aws/jsii-runtime-go"
	"github.com/cdklabs/cdk-nag-go/cdknag/v2"
)

// webhookKeyChars is the length of the generated key: 48 characters of
// [A-Za-z0-9] are, as they stand, the standard base64 of 36 bytes (a
// multiple of 4 characters, no padding, every character in the alphabet),
// and pkg/webhook.ParseSecret takes 24 to 64 bytes. About 285 bits of
// randomness.
const webhookKeyChars = 48

// webhookSecretPrefix starts every signing secret (Standard Webhooks).
const webhookSecretPrefix = "whsec_"

// newWebhookSecret is the signing secret the notifier and the API read,
// <prefix>/webhook-signing-secret, holding "whsec_" + base64 from the
// first deploy on, with nobody pasting anything.
//
// CloudFormation can generate a random string (GenerateSecretString) but
// not prefix it. So the stack generates the key in a seed secret, and the
// signing secret's value is "whsec_" joined to a dynamic reference to the
// seed ({{resolve:secretsmanager:...}}), which CloudFormation resolves
// when it creates the signing secret (CloudFormation User Guide,
// dynamic-references-secretsmanager.html: usable in any resource
// property; the template holds the reference, never the value). It
// resolves it again only when it updates that resource: the signing
// secret's properties must never change (TestWebhookSecret pins them), or
// a deploy would set the value back to the seed's and undo a rotation.
// After that the value is the operators' (docs/webhooks.md, "The deployment's signing secret"); the
// seed is used once. Both are kept with the table (RETAIN unless
// throwaway).
func newWebhookSecret(stack awscdk.Stack, cfg Config) awssecretsmanager.Secret {
	name := cfg.Settings.WebhookSecretName()
	seed := awssecretsmanager.NewSecret(stack, jsii.String("WebhookSecretSeed"), &awssecretsmanager.SecretProps{
		SecretName:  jsii.String(name + "-seed"),
		Description: jsii.String("aijobs: the random key of " + name + "'s first value, read once by CloudFormation; not used after"),
		GenerateSecretString: &awssecretsmanager.SecretStringGenerator{
			PasswordLength:          jsii.Number(webhookKeyChars),
			ExcludePunctuation:      jsii.Bool(true),
			IncludeSpace:            jsii.Bool(false),
			RequireEachIncludedType: jsii.Bool(false),
		},
		RemovalPolicy: removalPolicy(cfg),
	})
	secret := awssecretsmanager.NewSecret(stack, jsii.String("WebhookSecret"), &awssecretsmanager.SecretProps{
		SecretName: jsii.String(name),
		// Stale on purpose, and pinned (TestWebhookSecret): the API reads
		// it too (its webhook key routes derive each tenant's key from it,
		// and hand that key to the tenant), but a new description would
		// make CloudFormation update the secret and set its value back to
		// the seed's, undoing any rotation (docs/deploy.md, "The webhook
		// signing secret"). The stack's WebhookSecretArn output and the
		// API's role description say who reads it.
		Description:       jsii.String("aijobs: the webhook signing secret(s), \"whsec_...\" (a second one after a space during a rotation); only the notifier reads it"),
		SecretStringValue: awscdk.SecretValue_UnsafePlainText(jsii.String(webhookSecretPrefix + *seed.SecretValue().UnsafeUnwrap())),
		RemovalPolicy:     removalPolicy(cfg),
	})
	for _, s := range []awssecretsmanager.Secret{seed, secret} {
		cdknag.NagSuppressions_AddResourceSuppressions(s, &[]*cdknag.NagPackSuppression{{
			Id:     jsii.String("AwsSolutions-SMG4"),
			Reason: jsii.String(webhookRotationReason),
		}}, jsii.Bool(false))
	}
	return secret
}

// webhookRotationReason is why the signing secret has no automatic
// rotation (cdk-nag AwsSolutions-SMG4).
const webhookRotationReason = "Every tenant's webhook key is derived from this secret, and each tenant's receivers must be given their new key " +
	"before the old one stops signing: rotation is the operators' two-step change (docs/webhooks.md, section The deployment's signing secret), " +
	"which an automatic rotation would break (receivers would reject every delivery). The seed is read once, by CloudFormation, to make the first value."
