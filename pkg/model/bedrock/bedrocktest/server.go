// Package bedrocktest is a local server of Bedrock's batch inference
// control plane (CreateModelInvocationJob, GetModelInvocationJob:
// docs/lanes.md, "The providers' batch wires") over a real S3 API (kumo's in
// the tests): a job reads its JSONL input from the bucket and writes its
// output and manifest there, as Bedrock does, so the batch lane's Bedrock
// wire runs in `make test` without AWS.
//
// A record's last message may script it with markers:
// [[bedrock:error=N]] answers it with error code N, [[bedrock:expire]]
// leaves it out of the output the first time it is batched (the job ends
// PartiallyCompleted), [[bedrock:nousage]] answers it without its counts.
//
// It also answers Converse and ConverseStream calls as Bedrock does, each
// behaviour beside the documentation or public report it copies
// (docs/providers.md, "Anthropic and Bedrock"): the prompt cache's reads
// and writes counted apart from inputTokens (CacheRead, CacheWrite), and
// the tier that served the call named in the answer's serviceTier
// (Downgrade serves a priority call at the default tier), and
// InvokeModel of Titan Text Embeddings V2 (embeddings.go) and of Cohere
// Embed v3 (cohere.go).
package bedrocktest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"

	"github.com/aijobs/aijobs/pkg/model/batchtest"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/protocol/eventstream"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// Server is the control plane's state; New makes one.
type Server struct {
	// Polls is how many reads of a job find it in progress before it ends.
	Polls int
	// CacheRead and CacheWrite are the prompt tokens every answer says it
	// read from the prompt cache and wrote to it, as cacheReadInputTokens
	// and cacheWriteInputTokens on top of the prompt's inputTokens, which
	// leaves them out (TokenUsage,
	// https://docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_TokenUsage.html;
	// inputTokens without the cache: https://github.com/librefang/librefang/issues/5878,
	// https://github.com/sashiko-dev/sashiko/pull/113); totalTokens counts
	// them (https://github.com/maximhq/bifrost/pull/1872).
	CacheRead, CacheWrite int64
	// Downgrade serves a call that asked for the priority tier at the
	// default one, as Bedrock may, and says so in the answer's serviceTier
	// ("The service tier configuration for a served request is visible in
	// API response",
	// https://docs.aws.amazon.com/bedrock/latest/userguide/service-tiers-inference.html).
	Downgrade bool
	// Nonconforming answers a body that forces a tool with an input its
	// schema refuses (schema.go), so a test can watch the answer fail
	// validation.
	Nonconforming bool

	s3     *s3.Client
	mu     sync.Mutex
	jobs   batchtest.Batches[*invocation]
	billed []Usage
	// invoked counts InvokeModel calls (embeddings.go), cohereCalls the
	// texts of each Cohere Embed one (cohere.go).
	invoked     int
	cohereCalls []int
}

// Usage is an answer's counts in Bedrock's own words: Input is its
// inputTokens, which leaves out the cache's reads and writes; Tier the
// serviceTier it named ("" in a batch's output).
type Usage struct {
	Input, CacheRead, CacheWrite, Output int64
	Tier                                 string
}

// Bill is what Bedrock charges for u at the given prices per token: the
// model's input, cache read, cache write and output prices
// (https://aws.amazon.com/bedrock/pricing/).
func (u Usage) Bill(input, cacheRead, cacheWrite, output int64) int64 {
	return u.Input*input + u.CacheRead*cacheRead + u.CacheWrite*cacheWrite + u.Output*output
}

// Billed is every answer's usage, in the order answered.
func (s *Server) Billed() []Usage {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Usage(nil), s.billed...)
}

// Calls is how many Converse calls were answered (outside batches).
func (s *Server) Calls() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.jobs.Calls()
}

type invocation struct {
	arn, token, input, output string
	status                    string
	// model is the job's modelId, whose rules its records are held to.
	model string
}

// New is a server whose jobs read and write through objects.
func New(objects *s3.Client) *Server { return &Server{s3: objects} }

// Jobs is how many jobs were made.
func (s *Server) Jobs() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.jobs.Len()
}

// Generated is how often the record of job id was answered (billed).
func (s *Server) Generated(id string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.jobs.Generated(hex.EncodeToString([]byte(id)))
}

// Handler serves the control plane at the endpoint's root.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /model-invocation-job", s.create)
	mux.HandleFunc("GET /model-invocation-job/{id...}", s.get)
	mux.HandleFunc("POST /model/{model}/converse", s.converse)
	mux.HandleFunc("POST /model/{model}/converse-stream", s.converseStream)
	mux.HandleFunc("POST /model/{model}/invoke", s.invoke)
	return mux
}

// converse answers one Converse call as a job answers a record, naming
// the tier that served it.
func (s *Server) converse(w http.ResponseWriter, r *http.Request) {
	out, ok := s.call(r)
	if !ok {
		fail(w, http.StatusBadRequest, "ValidationException")
		return
	}
	batchtest.Reply(w, out)
}

// converseStream answers one ConverseStream call: the answer's text as
// contentBlockDelta events, then messageStop, then the metadata event with
// the usage and the tier that served it
// (https://docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_ConverseStreamMetadataEvent.html).
func (s *Server) converseStream(w http.ResponseWriter, r *http.Request) {
	out, ok := s.call(r)
	if !ok {
		fail(w, http.StatusBadRequest, "ValidationException")
		return
	}
	w.Header().Set("Content-Type", "application/vnd.amazon.eventstream")
	w.WriteHeader(http.StatusOK)
	events := []event{{"messageStart", map[string]any{"role": "assistant"}}}
	first := out.Output.Message.Content[0]
	events = append(events, streamBlock(first.Text, first.ToolUse)...)
	meta := map[string]any{"metrics": map[string]any{"latencyMs": 1}, "serviceTier": out.ServiceTier}
	if out.Usage != nil {
		meta["usage"] = out.Usage
	}
	events = append(events, event{"contentBlockStop", map[string]any{"contentBlockIndex": 0}},
		event{"messageStop", map[string]any{"stopReason": out.StopReason}}, event{"metadata", meta})
	enc := eventstream.NewEncoder()
	for _, ev := range events {
		var m eventstream.Message
		m.Headers.Set(":event-type", eventstream.StringValue(ev.typ))
		m.Headers.Set(":content-type", eventstream.StringValue("application/json"))
		m.Headers.Set(":message-type", eventstream.StringValue("event"))
		m.Payload, _ = json.Marshal(ev.body)
		if enc.Encode(w, m) != nil {
			return
		}
	}
}

// event is one event of a ConverseStream answer: its :event-type and body.
type event struct {
	typ  string
	body any
}

// converseOutput is a Converse answer as the fake writes it.
type converseOutput struct {
	Output struct {
		Message struct {
			Role    string `json:"role"`
			Content []struct {
				Text    string   `json:"text,omitempty"`
				ToolUse *toolUse `json:"toolUse,omitempty"`
			} `json:"content"`
		} `json:"message"`
	} `json:"output"`
	StopReason  string          `json:"stopReason"`
	Usage       json.RawMessage `json:"usage,omitempty"`
	ServiceTier map[string]any  `json:"serviceTier"`
}

// call answers one Converse or ConverseStream request as a job answers a
// record, and names the tier that served it: the one asked for (none is
// "default"), or default for priority when Downgrade.
func (s *Server) call(r *http.Request) (converseOutput, bool) {
	body, err := io.ReadAll(r.Body)
	var in struct {
		ServiceTier struct{ Type string } `json:"serviceTier"`
	}
	if err != nil || json.Unmarshal(body, &in) != nil {
		return converseOutput{}, false
	}
	tier := in.ServiceTier.Type
	if tier == "" || tier == "priority" && s.Downgrade {
		tier = "default"
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	rec, _ := json.Marshal(map[string]any{"recordId": fmt.Sprint("call", s.jobs.Call()), "modelInput": json.RawMessage(body)})
	billed := len(s.billed)
	line, _ := s.answerLocked(r.PathValue("model"), rec)
	var out struct {
		ModelOutput *converseOutput `json:"modelOutput"`
	}
	if json.Unmarshal(line, &out) != nil || out.ModelOutput == nil || len(out.ModelOutput.Output.Message.Content) == 0 {
		return converseOutput{}, false
	}
	if len(s.billed) > billed {
		s.billed[billed].Tier = tier
	}
	out.ModelOutput.ServiceTier = map[string]any{"type": tier}
	return *out.ModelOutput, true
}

type s3Config struct {
	S3 struct {
		URI string `json:"s3Uri"`
	} `json:"s3InputDataConfig"`
	Out struct {
		URI string `json:"s3Uri"`
	} `json:"s3OutputDataConfig"`
}

// jobName and requestToken are the patterns CreateModelInvocationJob
// holds a job's name and its client request token to (the Bedrock API
// model's ModelInvocationJobName and ModelInvocationIdempotencyToken):
// a name or token outside them is a ValidationException.
var (
	jobName      = regexp.MustCompile(`^[a-zA-Z0-9]{1,63}(-*[a-zA-Z0-9+\-.]){0,63}$`)
	requestToken = regexp.MustCompile(`^[a-zA-Z0-9]{1,256}(-*[a-zA-Z0-9]){0,256}$`)
)

func (s *Server) create(w http.ResponseWriter, r *http.Request) {
	var in struct {
		JobName, RoleArn, ModelID, ClientRequestToken, ModelInvocationType string
		InputDataConfig, OutputDataConfig                                  s3Config
	}
	if json.NewDecoder(r.Body).Decode(&in) != nil || !jobName.MatchString(in.JobName) || len(in.JobName) > 63 ||
		(in.ClientRequestToken != "" && !requestToken.MatchString(in.ClientRequestToken)) || in.RoleArn == "" || in.ModelID == "" ||
		in.ModelInvocationType != "Converse" || in.InputDataConfig.S3.URI == "" || in.OutputDataConfig.Out.URI == "" {
		fail(w, http.StatusBadRequest, "ValidationException")
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, j := range s.jobs.All() {
		if in.ClientRequestToken != "" && j.Wire.token == in.ClientRequestToken {
			batchtest.Reply(w, map[string]any{"jobArn": j.ID})
			return
		}
	}
	j := &invocation{arn: fmt.Sprintf("arn:aws:bedrock:us-east-1:123456789012:model-invocation-job/job%08d", s.jobs.Len()+1),
		token: in.ClientRequestToken, input: in.InputDataConfig.S3.URI, output: in.OutputDataConfig.Out.URI, status: "Submitted", model: in.ModelID}
	s.jobs.Add(j.arn, j)
	batchtest.Reply(w, map[string]any{"jobArn": j.arn})
}

func (s *Server) get(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	s.mu.Lock()
	defer s.mu.Unlock()
	b := s.jobs.Find(id)
	if b == nil {
		fail(w, http.StatusNotFound, "ResourceNotFoundException")
		return
	}
	j := b.Wire
	if b.Read(s.Polls) {
		if err := s.runLocked(r.Context(), j); err != nil {
			b.Unrun() // still Submitted: the next read tries again
			fail(w, http.StatusInternalServerError, "InternalServerException")
			return
		}
	}
	batchtest.Reply(w, map[string]any{"jobArn": j.arn, "status": j.status,
		"outputDataConfig": map[string]any{"s3OutputDataConfig": map[string]any{"s3Uri": j.output}}})
}

// runLocked answers the job's records and writes its output (s.mu held).
func (s *Server) runLocked(ctx context.Context, j *invocation) error {
	bucket, key := split(j.input)
	obj, err := s.s3.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
	if err != nil {
		return err
	}
	defer obj.Body.Close()
	var out bytes.Buffer
	total, answered := 0, 0
	sc := bufio.NewScanner(obj.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<26)
	for sc.Scan() {
		total++
		if line, ok := s.answerLocked(j.model, sc.Bytes()); ok {
			out.Write(line)
			answered++
		}
	}
	outBucket, prefix := split(j.output)
	folder := prefix + j.arn[strings.LastIndex(j.arn, "/")+1:] + "/"
	manifest, _ := json.Marshal(map[string]int{"totalRecordCount": total, "processedRecordCount": answered})
	for name, body := range map[string][]byte{key[strings.LastIndex(key, "/")+1:] + ".out": out.Bytes(), "manifest.json.out": manifest} {
		if _, err := s.s3.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(outBucket), Key: aws.String(folder + name),
			Body: bytes.NewReader(body), ContentLength: aws.Int64(int64(len(body)))}); err != nil {
			return err
		}
	}
	j.status = "Completed"
	if answered < total {
		j.status = "PartiallyCompleted"
	}
	return nil
}

var markers = batchtest.NewMarkers("bedrock", `error=(\d{3})`)

// answerLocked is one input record's output line for model, and false
// when it is left out (expired). A body Bedrock would refuse (refusal) is
// a record's error, and a call's ValidationException.
func (s *Server) answerLocked(model string, raw []byte) ([]byte, bool) {
	var rec struct {
		RecordID   string          `json:"recordId"`
		ModelInput json.RawMessage `json:"modelInput"`
	}
	var body struct {
		Messages []struct {
			Content []struct{ Text, Image, Document json.RawMessage } `json:"content"`
		} `json:"messages"`
		InferenceConfig struct{ MaxTokens int } `json:"inferenceConfig"`
		ToolConfig      *toolConfig             `json:"toolConfig"`
	}
	_ = json.Unmarshal(raw, &rec)
	_ = json.Unmarshal(rec.ModelInput, &body)
	last, prompt := "", 0
	for _, m := range body.Messages {
		for _, c := range m.Content {
			var text string
			if json.Unmarshal(c.Text, &text) == nil {
				last = text
			}
			prompt += len(text)/4 + 1
			if c.Image != nil || c.Document != nil {
				prompt += MediaTokens
			}
		}
	}
	res := map[string]any{"recordId": rec.RecordID, "modelInput": rec.ModelInput}
	switch sc := markers.Read(last); {
	case sc.Expire && s.jobs.ExpireOnce(rec.RecordID):
		return nil, false
	case sc.Fail != "":
		code, _ := strconv.Atoi(sc.Fail)
		res["error"] = map[string]any{"errorCode": code, "errorMessage": "scripted"}
	case refusal(model, rec.ModelInput) != "":
		res["error"] = map[string]any{"errorCode": 400, "errorMessage": refusal(model, rec.ModelInput)}
	default:
		s.jobs.Generate(rec.RecordID)
		content, stop := s.content(body.ToolConfig, "echo "+rec.RecordID[:min(8, len(rec.RecordID))])
		o := map[string]any{"output": map[string]any{"message": map[string]any{"role": "assistant", "content": content}},
			"stopReason": stop}
		if !sc.NoUsage {
			u := Usage{Input: int64(prompt), CacheRead: s.CacheRead, CacheWrite: s.CacheWrite, Output: int64(min(2, max(body.InferenceConfig.MaxTokens, 1)))}
			s.billed = append(s.billed, u)
			counts := map[string]any{"inputTokens": u.Input, "outputTokens": u.Output, "totalTokens": u.Input + u.CacheRead + u.CacheWrite + u.Output}
			if u.CacheRead > 0 || u.CacheWrite > 0 { // the cache's counts come only when it was used
				counts["cacheReadInputTokens"], counts["cacheWriteInputTokens"] = u.CacheRead, u.CacheWrite
			}
			o["usage"] = counts
		}
		res["modelOutput"] = o
	}
	b, _ := json.Marshal(res)
	return append(b, '\n'), true
}

// split is an s3:// URI's bucket and key.
func split(uri string) (string, string) {
	rest := strings.TrimPrefix(uri, "s3://")
	bucket, key, _ := strings.Cut(rest, "/")
	return bucket, key
}

func fail(w http.ResponseWriter, status int, code string) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Amzn-ErrorType", code)
	w.WriteHeader(status)
	_, _ = io.WriteString(w, `{"message":"refused"}`)
}
