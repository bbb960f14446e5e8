package bedrock_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime/types"

	"github.com/aijobs/aijobs/pkg/job"
	"github.com/aijobs/aijobs/pkg/model"
	"github.com/aijobs/aijobs/pkg/model/bedrock"
	"github.com/aijobs/aijobs/pkg/model/modeltest"
)

func TestGenerateRequestAndResponse(t *testing.T) {
	zero := 0.0
	tests := []struct {
		name     string
		r        func(model.Request) model.Request
		path     string // escaped
		wantBody string // the JSON body, keys sorted
	}{
		{
			name:     "config model, defaults omitted",
			r:        func(r model.Request) model.Request { return r },
			path:     "/model/anthropic.claude-3-haiku-20240307-v1%3A0/",
			wantBody: `{"messages":[{"content":[{"text":"SECRET-PROMPT tell me a story"}],"role":"user"}]}`,
		},
		{
			name: "system, max tokens, zero temperature is sent",
			r: func(r model.Request) model.Request {
				r.MaxTokens, r.Temperature = 256, &zero
				r.Messages = append([]job.Message{{Role: "system", Content: "be brief"}}, r.Messages...)
				return r
			},
			path: "/model/anthropic.claude-3-haiku-20240307-v1%3A0/",
			wantBody: `{"inferenceConfig":{"maxTokens":256,"temperature":0},` +
				`"messages":[{"content":[{"text":"SECRET-PROMPT tell me a story"}],"role":"user"}],"system":[{"text":"be brief"}]}`,
		},
		{
			name: "request model is an inference profile ARN; roles alternate",
			r: func(r model.Request) model.Request {
				r.Model = "arn:aws:bedrock:us-east-1:123456789012:inference-profile/us.anthropic.claude-3-5-haiku-20241022-v1:0"
				r.Messages = []job.Message{
					{Role: "system", Content: "be brief"},
					{Role: "user", Content: "hello"},
					{Role: "user", Content: "again"},
					{Role: "system", Content: "and kind"},
					{Role: "assistant", Content: "Hi."},
					{Role: "user", Content: prompt},
				}
				return r
			},
			path: "/model/arn%3Aaws%3Abedrock%3Aus-east-1%3A123456789012%3Ainference-profile%2Fus.anthropic.claude-3-5-haiku-20241022-v1%3A0/",
			wantBody: `{"messages":[{"content":[{"text":"hello"},{"text":"again"}],"role":"user"},` +
				`{"content":[{"text":"Hi."}],"role":"assistant"},` +
				`{"content":[{"text":"SECRET-PROMPT tell me a story"}],"role":"user"}],` +
				`"system":[{"text":"be brief"},{"text":"and kind"}]}`,
		},
	}
	for _, tt := range tests {
		for _, stream := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s stream=%v", tt.name, stream), func(t *testing.T) {
				srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					op := "converse"
					if stream {
						op = "converse-stream"
					}
					if r.Method != http.MethodPost || r.URL.EscapedPath() != tt.path+op {
						t.Errorf("got %s %s, want POST %s%s", r.Method, r.URL.EscapedPath(), tt.path, op)
					}
					if got := r.Header.Get("Content-Type"); got != "application/json" {
						t.Errorf("Content-Type %q", got)
					}
					// Signed with SigV4 for the bedrock service in the config's region.
					if got, want := r.Header.Get("Authorization"), "AWS4-HMAC-SHA256 Credential="+accessKey+"/"; !strings.HasPrefix(got, want) ||
						!strings.Contains(got, "/us-east-1/bedrock/aws4_request") {
						t.Errorf("Authorization %q, want SigV4 for bedrock in us-east-1", got)
					}
					var body any
					if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
						t.Errorf("decode body: %v", err)
					}
					if got, _ := json.Marshal(body); string(got) != tt.wantBody {
						t.Errorf("body\n got %s\nwant %s", got, tt.wantBody)
					}
					if stream {
						startStream(w).answer("end_turn", 12, 7, "Once", " upon", " a time.")
						return
					}
					w.Header().Set("Content-Type", "application/json")
					fmt.Fprint(w, converseJSON("Once upon a time.", "end_turn", 12, 7))
				}))
				defer srv.Close()
				var progress []int
				r := tt.r(request())
				r.Progress = func(n int) { progress = append(progress, n) }
				resp, err := newClient(t, srv.URL, stream).Generate(context.Background(), r)
				if err != nil {
					t.Fatalf("Generate: %v", err)
				}
				name := r.Model
				if name == "" {
					name = modelID
				}
				want := model.Response{Output: "Once upon a time.", Model: name, FinishReason: "end_turn",
					Usage: model.Usage{InputTokens: 12, OutputTokens: 7}}
				if resp != want {
					t.Fatalf("got %+v\nwant %+v", resp, want)
				}
				wantProgress := "[7]"
				if stream {
					wantProgress = "[1 2 3 7]"
				}
				if got := fmt.Sprint(progress); got != wantProgress {
					t.Fatalf("progress %s, want %s", got, wantProgress)
				}
			})
		}
	}
}

func TestConverseJoinsTextBlocksAndEstimatesMissingUsage(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"output":{"message":{"content":[{"reasoningContent":{"reasoningText":{"text":"hmm"}}},`+
			`{"text":"01234"},{"text":"56789"}],"role":"assistant"}},"stopReason":"max_tokens"}`)
	}))
	defer srv.Close()
	resp, err := newClient(t, srv.URL, false).Generate(context.Background(), request())
	if err != nil {
		t.Fatalf("Generate: %v", err)
	}
	// An upper estimate: the prompt ceiling, the text at two bytes a token.
	want := model.Response{Output: "0123456789", Model: modelID, FinishReason: "max_tokens",
		Usage: model.Usage{InputTokens: modeltest.PromptCeiling, OutputTokens: 5, Estimated: true}}
	if resp != want {
		t.Fatalf("got %+v\nwant %+v", resp, want)
	}
}

func TestStopReasons(t *testing.T) {
	tests := []struct {
		reason string
		class  job.ErrorClass // "" for a success
	}{
		{"end_turn", ""},
		{"stop_sequence", ""},
		{"max_tokens", ""},
		{"tool_use", ""},
		{"guardrail_intervened", job.ContentFiltered},
		{"content_filtered", job.ContentFiltered},
		{"model_context_window_exceeded", job.ContextLengthExceeded},
		{"malformed_model_output", job.ProviderError},
	}
	for _, tt := range tests {
		for _, stream := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s stream=%v", tt.reason, stream), func(t *testing.T) {
				srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					_, _ = io.Copy(io.Discard, r.Body)
					if stream {
						startStream(w).answer(tt.reason, 9, 2, "Once", " upon")
						return
					}
					w.Header().Set("Content-Type", "application/json")
					fmt.Fprint(w, converseJSON("Once upon", tt.reason, 9, 2))
				}))
				defer srv.Close()
				resp, err := newClient(t, srv.URL, stream).Generate(context.Background(), request())
				billed := model.Usage{InputTokens: 9, OutputTokens: 2}
				if tt.class == "" {
					if err != nil {
						t.Fatalf("Generate: %v", err)
					}
					if resp.FinishReason != tt.reason || resp.Output != "Once upon" || resp.Usage != billed {
						t.Fatalf("got %+v", resp)
					}
					return
				}
				me := asModelError(t, err)
				// The model ran: a withheld answer is still billed.
				if me.Class != tt.class || me.Usage != billed || me.Detail != "bedrock: stop_reason "+tt.reason {
					t.Fatalf("got %q %+v %q, want %q %+v", me.Class, me.Usage, me.Detail, tt.class, billed)
				}
			})
		}
	}
}

// stubAPI is an injected API: it records what it was asked.
type stubAPI struct {
	in  *bedrockruntime.ConverseInput
	err error
}

func (s *stubAPI) Converse(_ context.Context, in *bedrockruntime.ConverseInput, _ ...func(*bedrockruntime.Options)) (*bedrockruntime.ConverseOutput, error) {
	s.in = in
	if s.err != nil {
		return nil, s.err
	}
	return &bedrockruntime.ConverseOutput{
		Output: &types.ConverseOutputMemberMessage{Value: types.Message{Role: types.ConversationRoleAssistant,
			Content: []types.ContentBlock{&types.ContentBlockMemberText{Value: "ok"}}}},
		StopReason: types.StopReasonEndTurn,
		Usage:      &types.TokenUsage{InputTokens: aws.Int32(3), OutputTokens: aws.Int32(1)},
	}, nil
}

func (s *stubAPI) InvokeModel(context.Context, *bedrockruntime.InvokeModelInput, ...func(*bedrockruntime.Options)) (*bedrockruntime.InvokeModelOutput, error) {
	return nil, s.err
}

func (s *stubAPI) ConverseStream(context.Context, *bedrockruntime.ConverseStreamInput, ...func(*bedrockruntime.Options)) (*bedrockruntime.ConverseStreamOutput, error) {
	return nil, s.err
}

func TestInjectedAPI(t *testing.T) {
	api := &stubAPI{}
	c, err := bedrock.New(bedrock.Config{API: api, Model: "amazon.nova-micro-v1:0"})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	temp := 0.5
	r := request()
	r.MaxTokens, r.Temperature = 100, &temp
	r.Messages = append([]job.Message{{Role: "system", Content: "be brief"}}, r.Messages...)
	resp, err := c.Generate(context.Background(), r)
	if err != nil {
		t.Fatalf("Generate: %v", err)
	}
	if resp.Output != "ok" || resp.Model != "amazon.nova-micro-v1:0" || resp.Usage != (model.Usage{InputTokens: 3, OutputTokens: 1}) {
		t.Fatalf("got %+v", resp)
	}
	in := api.in
	if aws.ToString(in.ModelId) != "amazon.nova-micro-v1:0" || len(in.System) != 1 || len(in.Messages) != 1 ||
		in.Messages[0].Role != types.ConversationRoleUser || aws.ToInt32(in.InferenceConfig.MaxTokens) != 100 ||
		aws.ToFloat32(in.InferenceConfig.Temperature) != 0.5 {
		t.Fatalf("input %+v", in)
	}
	if s, ok := in.System[0].(*types.SystemContentBlockMemberText); !ok || s.Value != "be brief" {
		t.Fatalf("system %#v", in.System[0])
	}
	if b, ok := in.Messages[0].Content[0].(*types.ContentBlockMemberText); !ok || b.Value != prompt {
		t.Fatalf("content %#v", in.Messages[0].Content[0])
	}
}

func TestRefusedBeforeAnyCall(t *testing.T) {
	var requests atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { requests.Add(1) }))
	defer srv.Close()
	tests := []struct {
		name string
		cfg  bedrock.Config
		r    model.Request
	}{
		{"no model anywhere", bedrock.Config{AWS: awsConfig(), Endpoint: srv.URL}, request()},
		{"unknown role", bedrock.Config{AWS: awsConfig(), Endpoint: srv.URL, Model: modelID},
			model.Request{Messages: []job.Message{{Role: "tool", Content: prompt}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := bedrock.New(tt.cfg)
			if err != nil {
				t.Fatalf("New: %v", err)
			}
			_, err = c.Generate(context.Background(), tt.r)
			if me := asModelError(t, err); me.Class != job.InvalidRequest || me.Usage != (model.Usage{}) {
				t.Fatalf("got %q %+v, want invalid_request, nothing billed", me.Class, me.Usage)
			}
			if n := requests.Load(); n != 0 {
				t.Fatalf("%d requests sent for a request refused locally", n)
			}
		})
	}
}

func TestCredentialsFailure(t *testing.T) {
	var requests atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { requests.Add(1) }))
	defer srv.Close()
	cfg := awsConfig()
	cfg.Credentials = aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
		return aws.Credentials{}, errors.New("no EC2 IMDS role found")
	})
	c, err := bedrock.New(bedrock.Config{AWS: cfg, Endpoint: srv.URL, Model: modelID})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	_, err = c.Generate(context.Background(), request())
	me := asModelError(t, err)
	if me.Class != job.Internal || me.Detail != "bedrock: credentials unavailable" || me.Usage != (model.Usage{}) {
		t.Fatalf("got %q %q %+v, want internal (retryable), credentials unavailable, nothing billed", me.Class, me.Detail, me.Usage)
	}
	if !strings.Contains(err.Error(), "no EC2 IMDS role found") {
		t.Fatalf("%v lost its cause", err)
	}
	if n := requests.Load(); n != 0 {
		t.Fatalf("%d requests sent unsigned", n)
	}
}

func TestNew(t *testing.T) {
	noRegion := awsConfig()
	noRegion.Region = ""
	noCreds := awsConfig()
	noCreds.Credentials = nil
	for name, cfg := range map[string]bedrock.Config{
		"no region":         {AWS: noRegion},
		"no credentials":    {AWS: noCreds},
		"relative endpoint": {AWS: awsConfig(), Endpoint: "localhost:4000"},
	} {
		if _, err := bedrock.New(cfg); err == nil {
			t.Errorf("%s: New accepted %+v", name, cfg)
		}
	}
	c, err := bedrock.New(bedrock.Config{AWS: noRegion, Region: "eu-west-3"})
	if err != nil {
		t.Fatalf("New with Region: %v", err)
	}
	var _ model.Provider = c
}

// recorder is an HTTP client that records where requests go and answers
// them itself: nothing leaves the machine.
type recorder struct{ hosts []string }

func (rc *recorder) Do(r *http.Request) (*http.Response, error) {
	rc.hosts = append(rc.hosts, r.URL.Host)
	return &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"application/json"}},
		Body: io.NopCloser(strings.NewReader(converseJSON("ok", "end_turn", 1, 1))), Request: r}, nil
}

// The project points aws.Config.BaseEndpoint (and AWS_ENDPOINT_URL) at a
// local DynamoDB/SQS emulator; Bedrock must not follow it there.
func TestEndpointIgnoresEmulator(t *testing.T) {
	t.Setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:4566")
	t.Setenv("AWS_ENDPOINT_URL_BEDROCK_RUNTIME", "http://127.0.0.1:4567")
	emulator := awsConfig()
	emulator.BaseEndpoint = aws.String("http://127.0.0.1:4566")
	tests := []struct {
		name     string
		cfg      bedrock.Config
		wantHost string
	}{
		{"SDK resolution from the region", bedrock.Config{AWS: emulator}, "bedrock-runtime.us-east-1.amazonaws.com"},
		{"region override", bedrock.Config{AWS: emulator, Region: "eu-central-1"}, "bedrock-runtime.eu-central-1.amazonaws.com"},
		{"explicit endpoint", bedrock.Config{AWS: emulator, Endpoint: "https://vpce-0abc.bedrock-runtime.us-east-1.vpce.amazonaws.com"},
			"vpce-0abc.bedrock-runtime.us-east-1.vpce.amazonaws.com"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := &recorder{}
			tt.cfg.AWS.HTTPClient = rec
			tt.cfg.Model = modelID
			c, err := bedrock.New(tt.cfg)
			if err != nil {
				t.Fatalf("New: %v", err)
			}
			if _, err := c.Generate(context.Background(), request()); err != nil {
				t.Fatalf("Generate: %v", err)
			}
			if fmt.Sprint(rec.hosts) != "["+tt.wantHost+"]" {
				t.Fatalf("requests went to %v, want [%s]", rec.hosts, tt.wantHost)
			}
		})
	}
}
