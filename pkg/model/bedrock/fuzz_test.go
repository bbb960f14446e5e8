package bedrock_test

import (
	"bytes"
	"context"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/protocol/eventstream"
	"github.com/aws/aws-sdk-go-v2/credentials"

	"github.com/aijobs/aijobs/internal/modelfuzz"
	"github.com/aijobs/aijobs/pkg/model/bedrock"
)

// fuzzFrames encodes data as ConverseStream frames: pieces separated by
// 0xFF alternate an event type and its JSON payload; a type starting with
// "!" is an exception of that type. Valid frames (their CRCs right) let the
// fuzzer reach the event handling behind the SDK's frame decoder, which
// rejects nearly every raw mutation.
func fuzzFrames(data []byte) []byte {
	var out bytes.Buffer
	enc := eventstream.NewEncoder()
	parts := bytes.Split(data, []byte{0xFF})
	for i := 0; i+1 < len(parts); i += 2 {
		var m eventstream.Message
		typ := string(parts[i])
		if len(typ) > 0 && typ[0] == '!' {
			m.Headers.Set(":exception-type", eventstream.StringValue(typ[1:]))
			m.Headers.Set(":message-type", eventstream.StringValue("exception"))
		} else {
			m.Headers.Set(":event-type", eventstream.StringValue(typ))
			m.Headers.Set(":message-type", eventstream.StringValue("event"))
		}
		m.Headers.Set(":content-type", eventstream.StringValue("application/json"))
		m.Payload = parts[i+1]
		if err := enc.Encode(&out, m); err != nil {
			return out.Bytes()
		}
	}
	return out.Bytes()
}

// FuzzStream feeds arbitrary bytes to ConverseStream's event stream
// handling through the public client and the real SDK (issue 9, section
// 3): raw bytes as the body when framed is false, else the frames
// fuzzFrames builds. No panic, and every error is a classified,
// secret-free *model.Error (modelfuzz.Check). Seeds are in
// testdata/fuzz/FuzzStream; `make fuzz` runs it for FUZZTIME.
func FuzzStream(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte, framed bool) {
		body := data
		if framed {
			body = fuzzFrames(data)
		}
		c, err := bedrock.New(bedrock.Config{
			AWS: aws.Config{Region: "us-east-1", Credentials: credentials.NewStaticCredentialsProvider("AKIDFUZZ", modelfuzz.Key, ""),
				HTTPClient: modelfuzz.Answer{ContentType: "application/vnd.amazon.eventstream", Body: body}},
			Endpoint: "http://bedrock.test", Model: "anthropic.claude-3-haiku-20240307-v1:0", Stream: true})
		if err != nil {
			t.Fatal(err)
		}
		_, err = c.Generate(context.Background(), modelfuzz.Request(t))
		modelfuzz.Check(t, err)
	})
}
