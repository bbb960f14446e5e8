// Package bedrock is a model provider for Amazon Bedrock through the Converse
// and ConverseStream APIs, which take one request shape for every model
// Bedrock hosts (Anthropic, Meta, Mistral, Amazon Nova, ...), so one provider
// serves them all with IAM credentials instead of per-vendor API keys.
//
// Like every provider it makes exactly one HTTP request per Generate: the
// SDK's own retries are off (and redirects are never followed), because
// retries happen only through the claim path, where they are counted and paid
// for. It streams when asked, so progress is known while tokens arrive, and it
// reports the usage Bedrock counted or, when a call failed before Bedrock said,
// an upper estimate, so every attempt's cost is known.
package bedrock

import (
	"context"
	"errors"
	"net/url"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsbedrock "github.com/aws/aws-sdk-go-v2/service/bedrock"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime/types"

	"github.com/aijobs/aijobs/pkg/job"
	"github.com/aijobs/aijobs/pkg/model"
)

// API is the part of the Bedrock Runtime client the provider calls;
// *bedrockruntime.Client implements it.
type API interface {
	Converse(ctx context.Context, in *bedrockruntime.ConverseInput, optFns ...func(*bedrockruntime.Options)) (*bedrockruntime.ConverseOutput, error)
	ConverseStream(ctx context.Context, in *bedrockruntime.ConverseStreamInput, optFns ...func(*bedrockruntime.Options)) (*bedrockruntime.ConverseStreamOutput, error)
	// InvokeModel makes embeddings (embeddings.go).
	InvokeModel(ctx context.Context, in *bedrockruntime.InvokeModelInput, optFns ...func(*bedrockruntime.Options)) (*bedrockruntime.InvokeModelOutput, error)
}

// Config describes where Bedrock is and which model to ask.
type Config struct {
	// AWS holds the credentials, region and HTTP client, as awsclient.Load
	// resolves them. Its BaseEndpoint is ignored: the project points it at
	// a local DynamoDB/SQS emulator, which serves no Bedrock.
	AWS aws.Config
	// Region, when set, overrides AWS.Region: Bedrock models are offered in
	// fewer regions than the table and queue may live in.
	Region string
	// Endpoint, when set, replaces the SDK's endpoint for Bedrock Runtime
	// (a VPC endpoint, a test server). Empty means the SDK resolves it from
	// the region, ignoring AWS.BaseEndpoint and AWS_ENDPOINT_URL*.
	Endpoint string
	// Model is the model id, inference profile id or ARN used when a request
	// names none.
	Model string
	// Stream selects ConverseStream over Converse.
	Stream bool
	// Batch, when set, is where the batch lane's batches go (batch.go);
	// without it the provider takes no batches.
	Batch *Batch
	// API, when set, is called instead of a client built from the fields
	// above, which are then ignored. Its retries are its owner's business:
	// they must be off for one Generate to stay one billed call.
	API API
}

// Client is the provider. It is safe for concurrent use.
type Client struct {
	cfg Config
	api API
}

// New checks cfg and builds the SDK client: retries off, redirects never
// followed, and the endpoint either cfg.Endpoint or the SDK's own.
func New(cfg Config) (*Client, error) {
	if cfg.API != nil {
		return &Client{cfg: cfg, api: cfg.API}, nil
	}
	region := cfg.Region
	if region == "" {
		region = cfg.AWS.Region
	}
	if region == "" {
		return nil, errors.New("bedrock: a region is required")
	}
	if cfg.AWS.Credentials == nil && cfg.AWS.BearerAuthTokenProvider == nil {
		return nil, errors.New("bedrock: AWS credentials are required")
	}
	if cfg.Endpoint != "" {
		u, err := url.Parse(cfg.Endpoint)
		if err != nil || u.Scheme == "" || u.Host == "" {
			return nil, errors.New("bedrock: the endpoint is not an absolute URL")
		}
	}
	api := bedrockruntime.NewFromConfig(cfg.AWS, func(o *bedrockruntime.Options) {
		o.Region = region
		// NewFromConfig took AWS.BaseEndpoint, or AWS_ENDPOINT_URL and its
		// Bedrock variant: only an explicit Endpoint may move Bedrock.
		o.BaseEndpoint = nil
		if cfg.Endpoint != "" {
			o.BaseEndpoint = aws.String(cfg.Endpoint)
		}
		o.Retryer = aws.NopRetryer{}
		o.RetryMaxAttempts = 1
		o.HTTPClient = httpClient(o.HTTPClient)
	})
	if cfg.Batch != nil && cfg.Batch.API == nil {
		b := *cfg.Batch
		b.API = awsbedrock.NewFromConfig(cfg.AWS, func(o *awsbedrock.Options) {
			o.Region, o.BaseEndpoint = region, nil // as the runtime's, above
			if cfg.Endpoint != "" {
				o.BaseEndpoint = aws.String(cfg.Endpoint)
			}
		})
		cfg.Batch = &b
	}
	return &Client{cfg: cfg, api: api}, nil
}

// Generate makes one Converse or ConverseStream call.
func (c *Client) Generate(ctx context.Context, r model.Request) (model.Response, error) {
	if r.Model == "" {
		r.Model = c.cfg.Model
	}
	if r.Model == "" {
		return model.Response{}, &model.Error{Class: job.InvalidRequest, Detail: "bedrock: no model id",
			Err: errors.New("bedrock: neither the request nor the config names a model")}
	}
	if r.Texts != nil {
		return c.embed(ctx, r)
	}
	p, err := buildPrompt(r)
	if err != nil {
		return model.Response{}, err
	}
	// The SDK keeps ctx on its HTTP request, so net/http reports the write.
	ctx, sent := model.TraceSent(ctx)
	if c.cfg.Stream {
		return c.converseStream(ctx, r, p, sent)
	}
	return c.converse(ctx, r, p, sent)
}

// converse makes one non-streaming call.
func (c *Client) converse(ctx context.Context, r model.Request, p prompt, sent *model.Sent) (model.Response, error) {
	out, err := c.api.Converse(ctx, &bedrockruntime.ConverseInput{
		ModelId:         aws.String(r.Model),
		Messages:        p.messages,
		System:          p.system,
		InferenceConfig: p.inference,
		ServiceTier:     serviceTier(r.Lane),
		// Converse passes these to the model as they are.
		AdditionalModelRequestFields: p.additionalDocument(),
		ToolConfig:                   p.tools,
	})
	if err != nil {
		return model.Response{}, callError(ctx, err, sent.Done(), model.Unanswered(r, false), r.Lane)
	}
	var text []byte
	if m, ok := out.Output.(*types.ConverseOutputMemberMessage); ok {
		for _, b := range m.Value.Content {
			if t, ok := b.(*types.ContentBlockMemberText); ok {
				text = append(text, t.Value...)
			}
			if t, ok := b.(*types.ContentBlockMemberToolUse); ok {
				text = append(text, toolUseText(t)...)
			}
		}
	}
	u := model.Unreported(r, string(text))
	if out.Usage != nil {
		u = usage(out.Usage)
	}
	if r.Progress != nil {
		r.Progress(int(u.OutputTokens))
	}
	return servedBy(out.ServiceTier)(finish(string(text), r.Model, out.StopReason, u))
}

// serviceTier is what a lane asks of Bedrock. Standard (and no lane) sends
// none rather than "default", so a standard call's body stays what it was
// before lanes and Bedrock applies its own default.
func serviceTier(l job.Lane) *types.ServiceTier {
	switch l {
	case job.Flex:
		return &types.ServiceTier{Type: types.ServiceTierTypeFlex}
	case job.Priority:
		return &types.ServiceTier{Type: types.ServiceTierTypePriority}
	}
	return nil
}

// finish turns a completed answer into a response or, when the stop reason
// says the answer was withheld or cut by the model's limits, into an error
// that is still billed.
func finish(output, modelName string, reason types.StopReason, u model.Usage) (model.Response, error) {
	var class job.ErrorClass
	switch reason {
	case types.StopReasonGuardrailIntervened, types.StopReasonContentFiltered,
		"refusal": // an Anthropic model's own body, in a batch record (modelOutput)
		class = job.ContentFiltered
	case types.StopReasonModelContextWindowExceeded:
		class = job.ContextLengthExceeded
	case types.StopReasonMalformedModelOutput, types.StopReasonMalformedToolUse:
		class = job.ProviderError
	default: // end_turn, stop_sequence, max_tokens, tool_use and any newer reason
		return model.Response{Output: output, Model: modelName, FinishReason: string(reason), Usage: u}, nil
	}
	detail := "bedrock: stop_reason " + short(string(reason))
	return model.Response{}, &model.Error{Class: class, Detail: detail, Usage: u, Err: errors.New(detail)}
}

// usage converts Bedrock's token counts. inputTokens leaves out the
// tokens read from the prompt cache and written to it, which come apart
// as cacheReadInputTokens and cacheWriteInputTokens (TokenUsage,
// https://docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_TokenUsage.html;
// the API reference does not say so in words, the answers do: see
// docs/providers.md, "Anthropic and Bedrock"), so the input is their sum
// and the cache's reads and writes its parts, priced at their rates.
func usage(u *types.TokenUsage) model.Usage {
	read, write := int64(aws.ToInt32(u.CacheReadInputTokens)), int64(aws.ToInt32(u.CacheWriteInputTokens))
	return model.Usage{InputTokens: int64(aws.ToInt32(u.InputTokens)) + read + write, OutputTokens: int64(aws.ToInt32(u.OutputTokens)),
		CachedInputTokens: read, CacheWriteTokens: write}
}

// served is the lane of the tier Bedrock says served a call: the answer
// names it ("The service tier configuration for a served request is
// visible in API response",
// https://docs.aws.amazon.com/bedrock/latest/userguide/service-tiers-inference.html;
// ConverseOutput's and the stream's metadata event's serviceTier). Its
// default tier is the standard lane; reserved (capacity bought ahead),
// a tier not yet known, or none said is "": the lane asked for.
func served(t *types.ServiceTier) job.Lane {
	if t == nil {
		return ""
	}
	switch t.Type {
	case types.ServiceTierTypeDefault:
		return job.Standard
	case types.ServiceTierTypeFlex:
		return job.Flex
	case types.ServiceTierTypePriority:
		return job.Priority
	}
	return ""
}

// servedBy returns a function that marks a finished answer as served by
// tier's lane (served); an error is passed on as it is.
func servedBy(tier *types.ServiceTier) func(model.Response, error) (model.Response, error) {
	return func(resp model.Response, err error) (model.Response, error) {
		if err == nil {
			resp.Served = served(tier)
		}
		return resp, err
	}
}
