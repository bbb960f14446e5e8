package main

import (
	"fmt"
	"regexp"
	"sort"
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/jsii-runtime-go"

	"github.com/aijobs/aijobs/pkg/config"
	"github.com/aijobs/aijobs/pkg/job"
)

// The worker's model grants, derived from the routes: only what a rung
// can call, and nothing when no route needs it. The API, the reconciler
// and the notifier never call a model and get none of these; the batch
// lane's collector gets the keys of the providers its lanes call
// (collectorSecrets) and, for a Bedrock batch lane, making batch jobs on
// its models (BedrockBatch.collectorStatements), never invoking one.
//
// Bedrock: Converse and ConverseStream are authorized as
// bedrock:InvokeModel and bedrock:InvokeModelWithResponseStream.
//   - A foundation model id: arn:aws:bedrock:<region>::foundation-model/<id>.
//   - A system (cross-Region) inference profile id, "<geography>.<model>":
//     the profile, arn:aws:bedrock:<region>:<account>:inference-profile/<id>,
//     AND the foundation model in every Region the profile may route to
//     ("When you specify an inference profile in the Resource field ...
//     you must also specify the foundation model in each Region associated
//     with it", https://docs.aws.amazon.com/bedrock/latest/userguide/inference-profiles-prereq.html;
//     the profile, the model in the source Region and in every destination
//     Region, https://docs.aws.amazon.com/bedrock/latest/userguide/geographic-cross-region-inference.html).
//     The destination Regions are not in the id and AWS adds some over
//     time, so the Region is a wildcard: arn:aws:bedrock:*::foundation-model/<model>
//     (as aws-cdk's bedrock-alpha CrossRegionInferenceProfile.grantInvoke
//     does). That statement is narrowed by the condition
//     bedrock:InferenceProfileArn = the profile, so the model can only be
//     reached through it. A global profile is also authorized against the
//     Region-less model ARN, arn:aws:bedrock:::foundation-model/<model>
//     (https://docs.aws.amazon.com/bedrock/latest/userguide/global-cross-region-inference.html),
//     granted explicitly under the same condition.
//   - An ARN: granted as given; a system inference profile ARN also gets
//     its models as above. An application inference profile ARN is
//     refused: its id does not name the models behind it, so the stack
//     cannot grant them.
//
// Secrets Manager: secretsmanager:GetSecretValue on each api_key_secret.
// A complete secret ARN ends in "-" and six random characters; a partial
// ARN (no suffix) or a name gets "-??????", which matches exactly those six
// characters ("*" would also match other secrets whose names start the
// same), https://docs.aws.amazon.com/secretsmanager/latest/userguide/auth-and-access_examples.html.
// As Secrets Manager itself does, a name ending in "-" and six letters or
// digits is taken for a complete ARN.

// bedrockActions are what Converse and ConverseStream are authorized as.
var bedrockActions = []string{"bedrock:InvokeModel", "bedrock:InvokeModelWithResponseStream"}

// secretActions read a provider key.
var secretActions = []string{"secretsmanager:GetSecretValue"}

// profileCondition is the condition key that names the inference profile a
// call came through.
const profileCondition = "bedrock:InferenceProfileArn"

// geographies are the prefixes of system inference profile ids
// ("us.anthropic.claude-...", "global.anthropic.claude-...").
var geographies = []string{"us", "us-gov", "eu", "apac", "jp", "au", "global"}

// modelGrants are the worker's model permissions, as ARN templates with
// CloudFormation's ${AWS::Partition}, ${AWS::Region} and ${AWS::AccountId}.
type modelGrants struct {
	// Invoke are the Bedrock resources the worker may invoke directly:
	// foundation models, inference profiles, ARNs as given.
	Invoke []string
	// Profiles are, per inference profile, the foundation models it routes
	// to, granted only for calls through it.
	Profiles []profileModels
	// Secrets are the provider keys.
	Secrets []string
}

type profileModels struct {
	Profile string
	Models  []string
}

// wildcards are the granted resources with a "*": cdk-nag's IAM5 findings,
// each suppressed by name on the worker role
// (suppressInferenceProfileWildcards).
func (g modelGrants) wildcards() []string {
	var out []string
	for _, p := range g.Profiles {
		for _, m := range p.Models {
			if strings.Contains(m, "*") {
				out = append(out, m)
			}
		}
	}
	return out
}

// statements are the grants as IAM statements.
func (g modelGrants) statements() []awsiam.PolicyStatement {
	var out []awsiam.PolicyStatement
	if len(g.Invoke) > 0 {
		out = append(out, awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
			Actions: jsii.Strings(bedrockActions...), Resources: arns(g.Invoke),
		}))
	}
	for _, p := range g.Profiles {
		out = append(out, awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
			Actions: jsii.Strings(bedrockActions...), Resources: arns(p.Models),
			Conditions: &map[string]any{"ArnLike": map[string]any{profileCondition: arn(p.Profile)}},
		}))
	}
	if len(g.Secrets) > 0 {
		out = append(out, secretStatement(g.Secrets))
	}
	return out
}

// secretStatement reads the provider keys in secrets (ARN templates).
func secretStatement(secrets []string) awsiam.PolicyStatement {
	return awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Actions: jsii.Strings(secretActions...), Resources: arns(secrets),
	})
}

// arn turns an ARN template into a string CloudFormation resolves: Fn::Sub
// when it names a pseudo parameter, else the literal.
func arn(template string) *string {
	if strings.Contains(template, "${") {
		return awscdk.Fn_Sub(jsii.String(template), nil)
	}
	return jsii.String(template)
}

func arns(templates []string) *[]*string {
	out := make([]*string, len(templates))
	for i, t := range templates {
		out[i] = arn(t)
	}
	return &out
}

// nagResource is how cdk-nag names a resource in a finding: Fn::Sub's
// ${...} become <...>.
func nagResource(template string) string {
	return "Resource::" + strings.NewReplacer("${", "<", "}", ">").Replace(template)
}

// plainID is what a model id, an ARN or a secret name may contain: enough
// for every Bedrock id and Secrets Manager name, and nothing Fn::Sub would
// read as a parameter.
var plainID = regexp.MustCompile(`^[A-Za-z0-9._:/+=@-]+$`)

// secretSuffix is the "-" and six random characters Secrets Manager ends a
// secret's ARN with.
var secretSuffix = regexp.MustCompile(`-[A-Za-z0-9]{6}$`)

// modelAccess derives the worker's grants from the routes config.Load
// parsed: every Bedrock rung's model, every provider's key. Everything is
// sorted and deduplicated, so the template is stable.
func modelAccess(c Config) (modelGrants, error) {
	secrets, errs := keySecrets(c, sortedKeys(c.Providers))
	g, more := bedrockModels(c, func(rung job.Rung) (job.Rung, bool) { return rung, true })
	if errs = append(errs, more...); len(errs) > 0 {
		return modelGrants{}, fmt.Errorf("routes: %s", strings.Join(errs, "; "))
	}
	g.Secrets = secrets
	return g, nil
}

// bedrockModels are the Bedrock resources the rungs pick chooses call
// (pick gives the rung as it is called: itself for the worker, its batch
// lane for a Bedrock batch lane), sorted and each once, and a problem
// for each model the stack cannot grant.
func bedrockModels(c Config, pick func(job.Rung) (job.Rung, bool)) (modelGrants, []string) {
	var errs []string
	invoke := map[string]bool{}
	profiles := map[string]map[string]bool{}
	for _, route := range sortedKeys(c.Routes) {
		for i, rung := range c.Routes[route].Rungs {
			called, ok := pick(rung)
			p := c.Providers[called.Provider]
			if !ok || p.Kind != config.KindBedrock {
				continue
			}
			direct, profile, models, err := bedrockResources(p.Region, called.Model)
			if err != nil {
				errs = append(errs, fmt.Sprintf("route %q rung %d: %v", route, i, err))
				continue
			}
			invoke[direct] = true
			if profile != "" {
				if profiles[profile] == nil {
					profiles[profile] = map[string]bool{}
				}
				for _, m := range models {
					profiles[profile][m] = true
				}
			}
		}
	}
	g := modelGrants{Invoke: sortedKeys(invoke)}
	for _, profile := range sortedKeys(profiles) {
		g.Profiles = append(g.Profiles, profileModels{Profile: profile, Models: sortedKeys(profiles[profile])})
	}
	return g, errs
}

// keySecrets are the secrets (ARN templates, sorted, each once) holding
// the keys of the named providers, and a problem for each api_key_secret
// the stack cannot grant.
func keySecrets(c Config, names []string) (secrets, errs []string) {
	set := map[string]bool{}
	for _, name := range names {
		if id := c.Providers[name].APIKeySecret; id != "" {
			s, err := secretResource(id)
			if err != nil {
				errs = append(errs, fmt.Sprintf("provider %q: %v", name, err))
				continue
			}
			set[s] = true
		}
	}
	return sortedKeys(set), errs
}

// checkModelAccess refuses, at synth, a model id or secret the stack
// cannot grant.
func checkModelAccess(c Config) []string {
	if _, err := modelAccess(c); err != nil {
		return []string{err.Error()}
	}
	return nil
}

// bedrockResources is what one Bedrock rung calls: the resource it names
// and, for an inference profile, the profile (again, as the condition's
// value) and the foundation models it routes to.
func bedrockResources(region, model string) (direct, profile string, models []string, err error) {
	if !plainID.MatchString(model) {
		return "", "", nil, fmt.Errorf("model %q: not a Bedrock model id or ARN", model)
	}
	if region == "" {
		region = "${AWS::Region}"
	}
	if strings.HasPrefix(model, "arn:") {
		parts := strings.SplitN(model, ":", 6)
		if len(parts) != 6 || parts[2] != "bedrock" {
			return "", "", nil, fmt.Errorf("model %q: not a Bedrock ARN", model)
		}
		kind, id, _ := strings.Cut(parts[5], "/")
		switch kind {
		case "application-inference-profile":
			return "", "", nil, fmt.Errorf("model %q: an application inference profile does not name the foundation models behind it, "+
				"so the stack cannot grant them; use the system inference profile or foundation model id it was made from", model)
		case "inference-profile":
			base, ok := profileModel(id)
			if !ok {
				return "", "", nil, fmt.Errorf("model %q: an inference profile id starts with one of %s", model, strings.Join(geographies, ", "))
			}
			return model, model, profileModelArns(parts[1], id, base), nil
		}
		return model, "", nil, nil
	}
	if base, ok := profileModel(model); ok {
		p := "arn:${AWS::Partition}:bedrock:" + region + ":${AWS::AccountId}:inference-profile/" + model
		return p, p, profileModelArns("${AWS::Partition}", model, base), nil
	}
	return "arn:${AWS::Partition}:bedrock:" + region + "::foundation-model/" + model, "", nil, nil
}

// profileModel strips an inference profile id's geography prefix.
func profileModel(id string) (string, bool) {
	geo, base, ok := strings.Cut(id, ".")
	for _, g := range geographies {
		if ok && geo == g && base != "" {
			return base, true
		}
	}
	return "", false
}

// profileModelArns are the foundation model ARNs a profile routes to: the
// model in any Region, and for a global profile the Region-less ARN too.
func profileModelArns(partition, id, base string) []string {
	out := []string{"arn:" + partition + ":bedrock:*::foundation-model/" + base}
	if strings.HasPrefix(id, "global.") {
		out = append(out, "arn:"+partition+":bedrock:::foundation-model/"+base)
	}
	return out
}

// secretResource is the ARN (template) a GetSecretValue on id needs.
func secretResource(id string) (string, error) {
	if !plainID.MatchString(id) {
		return "", fmt.Errorf("api_key_secret %q: not a secret name or ARN", id)
	}
	if !strings.HasPrefix(id, "arn:") {
		return "arn:${AWS::Partition}:secretsmanager:${AWS::Region}:${AWS::AccountId}:secret:" + id + "-??????", nil
	}
	parts := strings.SplitN(id, ":", 7)
	if len(parts) != 7 || parts[2] != "secretsmanager" || parts[5] != "secret" || parts[6] == "" {
		return "", fmt.Errorf("api_key_secret %q: not a Secrets Manager secret ARN (arn:<partition>:secretsmanager:<region>:<account>:secret:<name>)", id)
	}
	if secretSuffix.MatchString(parts[6]) {
		return id, nil
	}
	return id + "-??????", nil
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
