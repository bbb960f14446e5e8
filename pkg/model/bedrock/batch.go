package bedrock

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsbedrock "github.com/aws/aws-sdk-go-v2/service/bedrock"
	btypes "github.com/aws/aws-sdk-go-v2/service/bedrock/types"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime/types"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/aijobs/aijobs/pkg/job"
	"github.com/aijobs/aijobs/pkg/model"
)

// The batch lane's wire (docs/lanes.md, "The batch lane"): a batch
// is one JSONL file of Converse requests written to the batch bucket and
// one model invocation job over it (invocation type Converse), made with
// our batch id as its client request token, so a collector that lost the
// create's answer, or died before recording it, makes the same job again
// and Bedrock answers the first. Bedrock writes each record's answer to
// the output prefix; each record's id is its job's id, hex-encoded (a
// record id is alphanumeric).

// BatchAPI is the part of the Bedrock control plane the batch lane calls;
// *bedrock.Client implements it.
type BatchAPI interface {
	CreateModelInvocationJob(ctx context.Context, in *awsbedrock.CreateModelInvocationJobInput, optFns ...func(*awsbedrock.Options)) (*awsbedrock.CreateModelInvocationJobOutput, error)
	GetModelInvocationJob(ctx context.Context, in *awsbedrock.GetModelInvocationJobInput, optFns ...func(*awsbedrock.Options)) (*awsbedrock.GetModelInvocationJobOutput, error)
}

// Objects is the part of S3 the batch lane calls on its bucket;
// *s3.Client implements it.
type Objects interface {
	PutObject(ctx context.Context, in *s3.PutObjectInput, optFns ...func(*s3.Options)) (*s3.PutObjectOutput, error)
	GetObject(ctx context.Context, in *s3.GetObjectInput, optFns ...func(*s3.Options)) (*s3.GetObjectOutput, error)
	ListObjectsV2(ctx context.Context, in *s3.ListObjectsV2Input, optFns ...func(*s3.Options)) (*s3.ListObjectsV2Output, error)
}

// Batch is where a Bedrock provider's batches go: the bucket that holds
// their input and output, and the service role Bedrock assumes to read
// and write it (the stack makes both: docs/deploy.md).
type Batch struct {
	Bucket  string
	RoleARN string
	API     BatchAPI
	Objects Objects
}

// batchHours is the job's timeout: the shortest Bedrock takes, a day, as
// the other providers' windows.
const batchHours = 24

// converseBody is a Converse request as a batch record's modelInput.
type converseBody struct {
	Messages        []converseMessage `json:"messages"`
	System          []converseText    `json:"system,omitempty"`
	InferenceConfig *inferenceConfig  `json:"inferenceConfig,omitempty"`
	// AdditionalModelRequestFields is the model's own fields, as
	// Converse takes them (prompt.additional).
	AdditionalModelRequestFields map[string]any `json:"additionalModelRequestFields,omitempty"`
	// ToolConfig carries the job's response_format (schema.go).
	ToolConfig *batchToolConfig `json:"toolConfig,omitempty"`
}

type converseMessage struct {
	Role    string         `json:"role"`
	Content []converseText `json:"content"`
}

type converseText struct {
	Text string `json:"text"`
	// ToolUse (Converse's) and Input (a Messages API tool_use block's)
	// are an answer's forced tool input (schema.go); never sent.
	ToolUse *toolUseJSON    `json:"toolUse,omitempty"`
	Input   json.RawMessage `json:"input,omitempty"`
	// media, when set, is an image or document block sent in the
	// text's place (parts.go).
	media any
}

type inferenceConfig struct {
	MaxTokens     *int32   `json:"maxTokens,omitempty"`
	Temperature   *float32 `json:"temperature,omitempty"`
	TopP          *float32 `json:"topP,omitempty"`
	StopSequences []string `json:"stopSequences,omitempty"`
}

type batchRecord struct {
	RecordID   string       `json:"recordId"`
	ModelInput converseBody `json:"modelInput"`
}

// outputRecord is one line of a job's output: the record's answer or its
// error.
type outputRecord struct {
	RecordID    string       `json:"recordId"`
	ModelOutput *modelOutput `json:"modelOutput"`
	Error       *struct {
		Code    json.RawMessage `json:"errorCode"`
		Message string          `json:"errorMessage"`
	} `json:"error"`
}

// modelOutput is a record's answer: a Converse response, as a job of
// invocation type Converse (ours) writes it, or the model's own body, as
// one of type InvokeModel does: for Anthropic's models the Messages API's
// (content, stop_reason, usage in snake case, the cache apart from
// input_tokens as in a call's answer). Both are read, so a record's cache
// is billed whichever the job wrote.
type modelOutput struct {
	Output struct {
		Message converseMessage `json:"message"`
	} `json:"output"`
	StopReason string `json:"stopReason"`
	// Content and StopReasonNative are the Messages API body's.
	Content          []converseText `json:"content"`
	StopReasonNative string         `json:"stop_reason"`
	Usage            *struct {
		InputTokens           int64 `json:"inputTokens"`
		OutputTokens          int64 `json:"outputTokens"`
		CacheReadInputTokens  int64 `json:"cacheReadInputTokens"`
		CacheWriteInputTokens int64 `json:"cacheWriteInputTokens"`
		// The Messages API body's usage.
		NativeInput      int64 `json:"input_tokens"`
		NativeOutput     int64 `json:"output_tokens"`
		NativeCacheRead  int64 `json:"cache_read_input_tokens"`
		NativeCacheWrite int64 `json:"cache_creation_input_tokens"`
	} `json:"usage"`
}

// answer is m's text, stop reason and usage (nil: none reported). A body
// is one shape or the other, so the two shapes' counts add up.
func (m *modelOutput) answer() (string, types.StopReason, *model.Usage) {
	var out strings.Builder
	for _, t := range append(m.Output.Message.Content, m.Content...) {
		out.WriteString(t.Text)
		if t.ToolUse != nil {
			out.Write(t.ToolUse.Input)
		}
		out.Write(t.Input)
	}
	reason := m.StopReason
	if reason == "" {
		reason = m.StopReasonNative
	}
	if m.Usage == nil {
		return out.String(), types.StopReason(reason), nil
	}
	v := m.Usage
	read, write := v.CacheReadInputTokens+v.NativeCacheRead, v.CacheWriteInputTokens+v.NativeCacheWrite
	return out.String(), types.StopReason(reason), &model.Usage{InputTokens: v.InputTokens + v.NativeInput + read + write,
		OutputTokens: v.OutputTokens + v.NativeOutput, CachedInputTokens: read, CacheWriteTokens: write}
}

// batches is the provider's batch wire, or an error when it has none.
func (c *Client) batches() (*Batch, error) {
	b := c.cfg.Batch
	if b == nil || b.API == nil || b.Objects == nil || b.Bucket == "" || b.RoleARN == "" {
		return nil, errors.New("bedrock: no batch bucket and role configured")
	}
	return b, nil
}

// SubmitBatch writes reqs as the batch key's input and makes its job
// (model.Batcher).
func (c *Client) SubmitBatch(ctx context.Context, key string, reqs []model.Request) (string, error) {
	b, err := c.batches()
	if err != nil {
		return "", err
	}
	var in bytes.Buffer
	enc := json.NewEncoder(&in)
	for _, r := range reqs {
		body, err := converseJSON(r)
		if err != nil {
			return "", err
		}
		if err := enc.Encode(batchRecord{RecordID: hex.EncodeToString([]byte(r.JobID)), ModelInput: body}); err != nil {
			return "", fmt.Errorf("bedrock: encode batch record: %w", err)
		}
	}
	prefix := "batches/" + key + "/"
	if _, err := b.Objects.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(b.Bucket), Key: aws.String(prefix + "input.jsonl"),
		Body: bytes.NewReader(in.Bytes()), ContentLength: aws.Int64(int64(in.Len()))}); err != nil {
		return "", controlError(ctx, err)
	}
	// Bedrock takes letters, digits and hyphens in a job's name and its
	// token, not the batch id's underscore; the same id always makes the
	// same token, so a resubmit is still recognised.
	token := strings.ReplaceAll(key, "_", "-")
	model := c.cfg.Model
	if len(reqs) > 0 && reqs[0].Model != "" {
		model = reqs[0].Model
	}
	out, err := b.API.CreateModelInvocationJob(ctx, &awsbedrock.CreateModelInvocationJobInput{
		JobName: aws.String("aijobs-" + token), ClientRequestToken: aws.String(token),
		ModelId: aws.String(model), RoleArn: aws.String(b.RoleARN), ModelInvocationType: btypes.ModelInvocationTypeConverse,
		TimeoutDurationInHours: aws.Int32(batchHours),
		InputDataConfig: &btypes.ModelInvocationJobInputDataConfigMemberS3InputDataConfig{Value: btypes.ModelInvocationJobS3InputDataConfig{
			S3Uri: aws.String("s3://" + b.Bucket + "/" + prefix + "input.jsonl"), S3InputFormat: btypes.S3InputFormatJsonl}},
		OutputDataConfig: &btypes.ModelInvocationJobOutputDataConfigMemberS3OutputDataConfig{Value: btypes.ModelInvocationJobS3OutputDataConfig{
			S3Uri: aws.String("s3://" + b.Bucket + "/" + prefix + "output/")}},
	})
	if err != nil {
		return "", controlError(ctx, err)
	}
	return aws.ToString(out.JobArn), nil
}

// converseJSON is r as a Converse request body.
func converseJSON(r model.Request) (converseBody, error) {
	p, err := buildPrompt(r)
	if err != nil {
		return converseBody{}, err
	}
	var body converseBody
	for _, s := range p.system {
		if t, ok := s.(*types.SystemContentBlockMemberText); ok {
			body.System = append(body.System, converseText{Text: t.Value})
		}
	}
	for _, m := range p.messages {
		cm := converseMessage{Role: string(m.Role)}
		for _, blk := range m.Content {
			if t, ok := blk.(*types.ContentBlockMemberText); ok {
				cm.Content = append(cm.Content, converseText{Text: t.Value})
			} else if m := converseMedia(blk); m != nil {
				cm.Content = append(cm.Content, converseText{media: m})
			}
		}
		body.Messages = append(body.Messages, cm)
	}
	if p.inference != nil {
		body.InferenceConfig = &inferenceConfig{MaxTokens: p.inference.MaxTokens, Temperature: p.inference.Temperature,
			TopP: p.inference.TopP, StopSequences: p.inference.StopSequences}
	}
	body.AdditionalModelRequestFields = p.additional
	body.ToolConfig = batchTools(r.Options.ResponseFormat)
	return body, nil
}

// BatchEnded reports whether the job id will change no more.
func (c *Client) BatchEnded(ctx context.Context, id string) (bool, error) {
	_, ended, err := c.job(ctx, id)
	return ended, err
}

// job is job id's output prefix, and whether it ended.
func (c *Client) job(ctx context.Context, id string) (string, bool, error) {
	b, err := c.batches()
	if err != nil {
		return "", false, err
	}
	out, err := b.API.GetModelInvocationJob(ctx, &awsbedrock.GetModelInvocationJobInput{JobIdentifier: aws.String(id)})
	if err != nil {
		return "", false, controlError(ctx, err)
	}
	switch out.Status {
	case btypes.ModelInvocationJobStatusCompleted, btypes.ModelInvocationJobStatusPartiallyCompleted, btypes.ModelInvocationJobStatusFailed,
		btypes.ModelInvocationJobStatusStopped, btypes.ModelInvocationJobStatusExpired:
	default:
		return "", false, nil
	}
	prefix := ""
	if o, ok := out.OutputDataConfig.(*btypes.ModelInvocationJobOutputDataConfigMemberS3OutputDataConfig); ok {
		prefix = strings.TrimPrefix(aws.ToString(o.Value.S3Uri), "s3://"+b.Bucket+"/")
	}
	// Bedrock writes under a folder named after the job's id, the ARN's
	// last part.
	return prefix + id[strings.LastIndex(id, "/")+1:] + "/", true, nil
}

// BatchResults reads every output file of the ended job id. A record with
// no line (a job that failed or stopped before it) has no result: the
// collector hands its job back.
func (c *Client) BatchResults(ctx context.Context, id string, each func(string, model.Response, error) error) error {
	prefix, ended, err := c.job(ctx, id)
	if err != nil || !ended {
		return errors.Join(fmt.Errorf("bedrock: batch job %s has not ended", id), err)
	}
	b, _ := c.batches()
	list, err := b.Objects.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String(b.Bucket), Prefix: aws.String(prefix)})
	if err != nil {
		return controlError(ctx, err)
	}
	for _, o := range list.Contents {
		if !strings.HasSuffix(aws.ToString(o.Key), ".jsonl.out") {
			continue // the manifest
		}
		if err := c.readOutput(ctx, b, aws.ToString(o.Key), each); err != nil {
			return err
		}
	}
	return nil
}

// readOutput calls each with every record of the output file key.
func (c *Client) readOutput(ctx context.Context, b *Batch, key string, each func(string, model.Response, error) error) error {
	obj, err := b.Objects.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(b.Bucket), Key: aws.String(key)})
	if err != nil {
		return controlError(ctx, err)
	}
	defer obj.Body.Close()
	return model.EachResult(obj.Body, "bedrock: read batch output "+key, func(rec outputRecord) error {
		id, err := hex.DecodeString(rec.RecordID)
		if err != nil || len(id) == 0 { // names no job of ours
			return nil
		}
		out, rerr := c.record(rec)
		return each(string(id), out, rerr)
	})
}

// record is rec's answer, or its error (billed nothing: a batch bills
// only answers).
func (c *Client) record(rec outputRecord) (model.Response, error) {
	if rec.Error != nil || rec.ModelOutput == nil {
		// The error code is an HTTP status in Bedrock's examples; an
		// exception's name is read as one too.
		status, code := 0, ""
		if rec.Error != nil && json.Unmarshal(rec.Error.Code, &status) != nil {
			_ = json.Unmarshal(rec.Error.Code, &code)
		}
		msg := ""
		if rec.Error != nil {
			msg = rec.Error.Message
		}
		return model.Response{}, apiError(code, msg, status, model.Usage{})
	}
	text, reason, reported := rec.ModelOutput.answer()
	u := model.BatchUnreported(text)
	if reported != nil { // as a call's usage (usage): the cache apart from the input count
		u = *reported
	}
	return finish(text, "", reason, u)
}

// controlError classifies a control-plane or S3 call's failure: an AWS
// answer by its code, else a failure in transit. Nothing here is billed.
func controlError(ctx context.Context, err error) error {
	return callError(ctx, err, false, model.Usage{}, job.Batch)
}
