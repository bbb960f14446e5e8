package bedrock

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime"

	"github.com/aijobs/aijobs/pkg/job"
	"github.com/aijobs/aijobs/pkg/model"
	"github.com/aijobs/aijobs/pkg/wire"
)

// TitanDimensions are the vector lengths Titan Text Embeddings V2 makes:
// "The following values are accepted: 1024 (default), 512, 256"
// (docs.aws.amazon.com/bedrock/latest/userguide/model-parameters-titan-embed-text.html,
// "V2 Request"; docs/embeddings.md, "Bedrock").
var TitanDimensions = []int{256, 512, 1024}

// IsTitanEmbedding reports whether model is Titan Text Embeddings V2,
// by its id or an inference profile's.
func IsTitanEmbedding(model string) bool {
	return strings.Contains(model, "amazon.titan-embed-text-v2")
}

// titanRequest is one InvokeModel body of Titan Text Embeddings V2: one
// text a call ("inputText"), the model's own "normalize" default kept.
type titanRequest struct {
	InputText  string `json:"inputText"`
	Dimensions int    `json:"dimensions,omitempty"`
}

// titanResponse is its answer: "embedding" always floats, and the
// input's tokens, the call's bill.
type titanResponse struct {
	Embedding           []float32 `json:"embedding"`
	InputTextTokenCount *int64    `json:"inputTextTokenCount"`
}

// embed answers r's texts' vectors in calls, in order: Titan takes one
// text a call, Cohere Embed v3 up to CohereTexts (cohere.go); their usage
// is summed. A call that fails ends the attempt with its error, its usage
// every call's so far.
func (c *Client) embed(ctx context.Context, r model.Request) (model.Response, error) {
	once, per := c.titanOnce, 1
	switch {
	case IsCohereEmbedding(r.Model):
		once, per = c.cohereOnce, CohereTexts
	case !IsTitanEmbedding(r.Model):
		return model.Response{}, model.Errorf(job.InvalidRequest, "bedrock: %s makes no embeddings here", r.Model)
	}
	vectors := make([]string, 0, len(r.Texts))
	var used model.Usage
	for texts := range slices.Chunk(r.Texts, per) {
		call := r
		call.Texts = texts
		v, u, err := once(ctx, call)
		used = model.Usage{InputTokens: used.InputTokens + u.InputTokens, Estimated: used.Estimated || u.Estimated}
		if err != nil {
			var me *model.Error
			if !errors.As(err, &me) {
				me = &model.Error{Class: job.Internal, Detail: "bedrock: embeddings", Err: err}
			}
			me.Usage = used
			return model.Response{}, me
		}
		vectors = append(vectors, v...)
	}
	return model.Response{Output: wire.EncodeEmbeddings(vectors), Model: r.Model, Usage: used}, nil
}

// titanOnce is one InvokeModel of r's one text: its vector as
// wire.EncodeVector, and what the call billed (failed ones included).
func (c *Client) titanOnce(ctx context.Context, r model.Request) ([]string, model.Usage, error) {
	body, err := json.Marshal(titanRequest{InputText: r.Texts[0], Dimensions: r.Dimensions})
	if err != nil {
		return nil, model.Usage{}, &model.Error{Class: job.Internal, Detail: "bedrock: encode request", Err: err}
	}
	ctx, sent := model.TraceSent(ctx)
	out, err := c.api.InvokeModel(ctx, &bedrockruntime.InvokeModelInput{ModelId: aws.String(r.Model), Body: body,
		ContentType: aws.String("application/json"), Accept: aws.String("application/json")})
	if err != nil {
		e := callError(ctx, err, sent.Done(), model.Unanswered(r, false), r.Lane)
		return nil, e.Usage, e
	}
	var tr titanResponse
	if err := json.Unmarshal(out.Body, &tr); err != nil || tr.InputTextTokenCount == nil {
		u := model.Unanswered(r, false)
		return nil, u, &model.Error{Class: job.ProviderError, Detail: "bedrock: unparseable embedding", Usage: u,
			Err: fmt.Errorf("bedrock: decode embedding: %v", err)}
	}
	u := model.Usage{InputTokens: *tr.InputTextTokenCount}
	if len(tr.Embedding) == 0 || r.Dimensions != 0 && len(tr.Embedding) != r.Dimensions {
		return nil, u, &model.Error{Class: job.ProviderError, Detail: "bedrock: embedding of the wrong length", Usage: u,
			Err: fmt.Errorf("bedrock: %d dimensions, want %d", len(tr.Embedding), r.Dimensions)}
	}
	return []string{wire.EncodeVector(tr.Embedding)}, u, nil
}
