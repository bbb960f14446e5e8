package bedrock

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/aijobs/aijobs/pkg/job"
	"github.com/aijobs/aijobs/pkg/model"
	"github.com/aijobs/aijobs/pkg/wire"
)

// The bounds of one Cohere Embed v3 InvokeModel: "Texts per call ...
// 96 texts", "Characters ... 2048 characters" a text, and vectors of a
// fixed 1,024 dimensions
// (docs.aws.amazon.com/bedrock/latest/userguide/model-parameters-embed-v3.html,
// "Request"; docs/embeddings.md, "Bedrock").
const (
	CohereTexts      = 96
	CohereTextChars  = 2048
	CohereDimensions = 1024
)

// CohereInputType is the input_type every call sends: the portable input
// has no such field, and a job's texts are most often documents embedded
// to be stored and searched ("use search_document when you encode
// documents for embeddings that you store in a vector database", the
// page above; docs/embeddings.md, "Bedrock").
const CohereInputType = "search_document"

// InputTokenHeader is where Bedrock states an InvokeModel's input
// tokens; a Cohere Embed answer's body holds no count, and the SDK's
// InvokeModelOutput does not carry the header, so it is read from the
// raw response (docs/embeddings.md, "Bedrock"). AWS's API reference does
// not list it; its users' reports do, for Cohere Embed on Bedrock
// (aws/aws-sdk-js-v3#8172, maximhq/bifrost#3917, langchain4j#5057).
const InputTokenHeader = "X-Amzn-Bedrock-Input-Token-Count"

// IsCohereEmbedding reports whether model is Cohere Embed v3 (English or
// multilingual), by its id or an inference profile's.
func IsCohereEmbedding(model string) bool {
	return strings.Contains(model, "cohere.embed-english-v3") || strings.Contains(model, "cohere.embed-multilingual-v3")
}

// cohereRequest is one InvokeModel body of Cohere Embed v3. Truncate is
// NONE so that a text over the model's tokens is refused rather than
// silently cut ("NONE – (Default) Returns an error when the input
// exceeds the maximum input token length"); the floats are asked by
// name, so the answer's shape is embeddings_by_type whatever the
// default.
type cohereRequest struct {
	Texts          []string `json:"texts"`
	InputType      string   `json:"input_type"`
	Truncate       string   `json:"truncate"`
	EmbeddingTypes []string `json:"embedding_types"`
}

// cohereResponse is its answer: one float vector a text, in order.
type cohereResponse struct {
	Embeddings struct {
		Float [][]float32 `json:"float"`
	} `json:"embeddings"`
	ResponseType string `json:"response_type"`
}

// cohereOnce is one InvokeModel of r's texts (at most CohereTexts): their
// vectors as wire.EncodeVector, in order, and what the call billed
// (failed ones included).
func (c *Client) cohereOnce(ctx context.Context, r model.Request) ([]string, model.Usage, error) {
	body, err := json.Marshal(cohereRequest{Texts: r.Texts, InputType: CohereInputType, Truncate: "NONE",
		EmbeddingTypes: []string{"float"}})
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
	u := cohereUsage(r, out)
	var cr cohereResponse
	if err := json.Unmarshal(out.Body, &cr); err != nil || cr.ResponseType != "embeddings_by_type" {
		return nil, u, &model.Error{Class: job.ProviderError, Detail: "bedrock: unparseable embedding", Usage: u,
			Err: fmt.Errorf("bedrock: decode embeddings (%q): %v", cr.ResponseType, err)}
	}
	if len(cr.Embeddings.Float) != len(r.Texts) {
		return nil, u, &model.Error{Class: job.ProviderError, Detail: "bedrock: embeddings miscounted", Usage: u,
			Err: fmt.Errorf("bedrock: %d embeddings for %d texts", len(cr.Embeddings.Float), len(r.Texts))}
	}
	vectors := make([]string, len(cr.Embeddings.Float))
	for i, v := range cr.Embeddings.Float {
		if len(v) != CohereDimensions {
			return nil, u, &model.Error{Class: job.ProviderError, Detail: "bedrock: embedding of the wrong length", Usage: u,
				Err: fmt.Errorf("bedrock: %d dimensions, want %d", len(v), CohereDimensions)}
		}
		vectors[i] = wire.EncodeVector(v)
	}
	return vectors, u, nil
}

// cohereUsage is what an answered call billed: the input token header's
// count, exact. Without it (a proxy that drops headers, a fake API that
// has no raw response) the texts' ceiling is billed, marked estimated,
// as any answer that came without its counts (model.Unreported).
func cohereUsage(r model.Request, out *bedrockruntime.InvokeModelOutput) model.Usage {
	if raw, ok := awsmiddleware.GetRawResponse(out.ResultMetadata).(*smithyhttp.Response); ok {
		if n, err := strconv.ParseInt(raw.Header.Get(InputTokenHeader), 10, 64); err == nil && n >= 0 {
			return model.Usage{InputTokens: n}
		}
	}
	return model.Unreported(r, "")
}
