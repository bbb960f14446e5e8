package bedrock

import (
	"context"
	"io"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime/types"

	"github.com/aijobs/aijobs/pkg/model"
)

// converseStream makes one streaming call and consumes its event stream:
// text deltas build the output and drive progress (one token per delta
// until the metadata event gives the real counts), messageStop carries the
// stop reason. A stream cut short, ended by the context or broken by an
// in-stream exception still reports the tokens seen so far, so the attempt
// is paid for: Bedrock's counts if its metadata event arrived, else
// estimated (model.StreamUsage).
func (c *Client) converseStream(ctx context.Context, r model.Request, p prompt, sent *model.Sent) (model.Response, error) {
	out, err := c.api.ConverseStream(ctx, &bedrockruntime.ConverseStreamInput{
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
		return model.Response{}, callError(ctx, err, sent.Done(), model.Unanswered(r, true), r.Lane)
	}
	es := out.GetStream()
	// Closing the stream closes the response body, and so the connection:
	// on every early return Bedrock sees the client go away.
	defer es.Close()

	var text strings.Builder
	var reason types.StopReason
	var final *types.TokenUsage
	var tier *types.ServiceTier // the metadata event's: the tier that served it
	deltas, stopped := 0, false
	seen := func() model.Usage {
		if final != nil { // the metadata event comes last: Bedrock's own count
			return usage(final)
		}
		return model.StreamUsage(r, 0, int64(deltas), 0, false)
	}
	events := es.Events()
read:
	for {
		select {
		case <-ctx.Done():
			return model.Response{}, transportError(ctx, ctx.Err(), seen())
		case ev, ok := <-events:
			if !ok {
				break read
			}
			switch v := ev.(type) {
			case *types.ConverseStreamOutputMemberContentBlockDelta:
				piece := toolUseDelta(v.Value.Delta)
				if t, ok := v.Value.Delta.(*types.ContentBlockDeltaMemberText); ok {
					piece = t.Value
				}
				if piece != "" {
					text.WriteString(piece)
					deltas++
					if r.Progress != nil {
						r.Progress(deltas)
					}
				}
			case *types.ConverseStreamOutputMemberMessageStop:
				reason, stopped = v.Value.StopReason, true
			case *types.ConverseStreamOutputMemberMetadata:
				if v.Value.Usage != nil {
					final = v.Value.Usage
				}
				tier = v.Value.ServiceTier
			}
		}
	}
	if err := es.Err(); err != nil {
		return model.Response{}, streamError(ctx, err, seen(), r.Lane)
	}
	if ctx.Err() != nil {
		return model.Response{}, transportError(ctx, ctx.Err(), seen())
	}
	if !stopped {
		// The SDK ends the event channel quietly when the body ends, even
		// mid-frame: without messageStop the answer was cut.
		return model.Response{}, transportError(ctx, io.ErrUnexpectedEOF, seen())
	}
	u := seen()
	if r.Progress != nil && u.OutputTokens > int64(deltas) { // never back
		r.Progress(int(u.OutputTokens))
	}
	return servedBy(tier)(finish(text.String(), r.Model, reason, u))
}
