// Package bedrocktest is a local server of Bedrock's batch inference
// control plane (CreateModelInvocationJob, GetModelInvocationJob:
// docs/architecture.md, "The providers' batch wires") over a real S3 API (kumo's in
// the tests): a job reads its JSONL input from the bucket and writes its
// output and manifest there, as Bedrock does, so the batch lane's Bedrock
// wire runs in `make test` without AWS.
//
// A record's last message may script it with markers:
// [[bedrock:error=N]] answers it with error code N, [[bedrock:expire]]
// leaves it out of the output the first time it is batched (the job ends
// PartiallyCompleted), [[bedrock:nousage]] answers it without its counts.
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

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// Server is the control plane's state; New makes one.
type Server struct {
	// Polls is how many reads of a job find it in progress before it ends.
	Polls int

	s3      *s3.Client
	mu      sync.Mutex
	jobs    []*invocation
	made    map[string]int
	expired map[string]bool
	calls   int
}

// Calls is how many Converse calls were answered (outside batches).
func (s *Server) Calls() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls
}

type invocation struct {
	arn, token, input, output string
	polls                     int
	status                    string
}

// New is a server whose jobs read and write through objects.
func New(objects *s3.Client) *Server { return &Server{s3: objects} }

// Jobs is how many jobs were made.
func (s *Server) Jobs() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.jobs)
}

// Generated is how often the record of job id was answered (billed).
func (s *Server) Generated(id string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.made[hex.EncodeToString([]byte(id))]
}

// Handler serves the control plane at the endpoint's root.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /model-invocation-job", s.create)
	mux.HandleFunc("GET /model-invocation-job/{id...}", s.get)
	mux.HandleFunc("POST /model/{model}/converse", s.converse)
	return mux
}

// converse answers one Converse call as a job answers a record.
func (s *Server) converse(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		fail(w, http.StatusBadRequest, "ValidationException")
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls++
	rec, _ := json.Marshal(map[string]any{"recordId": fmt.Sprint("call", s.calls), "modelInput": json.RawMessage(body)})
	line, _ := s.answerLocked(rec)
	var out struct {
		ModelOutput json.RawMessage `json:"modelOutput"`
	}
	if json.Unmarshal(line, &out) != nil || out.ModelOutput == nil {
		fail(w, http.StatusBadRequest, "ValidationException")
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(out.ModelOutput)
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
	for _, j := range s.jobs {
		if in.ClientRequestToken != "" && j.token == in.ClientRequestToken {
			reply(w, map[string]any{"jobArn": j.arn})
			return
		}
	}
	j := &invocation{arn: fmt.Sprintf("arn:aws:bedrock:us-east-1:123456789012:model-invocation-job/job%08d", len(s.jobs)+1),
		token: in.ClientRequestToken, input: in.InputDataConfig.S3.URI, output: in.OutputDataConfig.Out.URI, status: "Submitted"}
	s.jobs = append(s.jobs, j)
	reply(w, map[string]any{"jobArn": j.arn})
}

func (s *Server) get(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, j := range s.jobs {
		if j.arn != id {
			continue
		}
		if j.polls++; j.polls > s.Polls && j.status == "Submitted" {
			if err := s.runLocked(r.Context(), j); err != nil {
				fail(w, http.StatusInternalServerError, "InternalServerException")
				return
			}
		}
		reply(w, map[string]any{"jobArn": j.arn, "status": j.status,
			"outputDataConfig": map[string]any{"s3OutputDataConfig": map[string]any{"s3Uri": j.output}}})
		return
	}
	fail(w, http.StatusNotFound, "ResourceNotFoundException")
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
		if line, ok := s.answerLocked(sc.Bytes()); ok {
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

var errorMarker = regexp.MustCompile(`\[\[bedrock:error=(\d{3})\]\]`)

// answerLocked is one input record's output line, and false when it is
// left out (expired).
func (s *Server) answerLocked(raw []byte) ([]byte, bool) {
	var rec struct {
		RecordID   string          `json:"recordId"`
		ModelInput json.RawMessage `json:"modelInput"`
	}
	var body struct {
		Messages []struct {
			Content []struct{ Text string } `json:"content"`
		} `json:"messages"`
		InferenceConfig struct{ MaxTokens int } `json:"inferenceConfig"`
	}
	_ = json.Unmarshal(raw, &rec)
	_ = json.Unmarshal(rec.ModelInput, &body)
	last, prompt := "", 0
	for _, m := range body.Messages {
		for _, c := range m.Content {
			last, prompt = c.Text, prompt+len(c.Text)/4+1
		}
	}
	if s.made == nil {
		s.made, s.expired = map[string]int{}, map[string]bool{}
	}
	res := map[string]any{"recordId": rec.RecordID, "modelInput": rec.ModelInput}
	switch m := errorMarker.FindStringSubmatch(last); {
	case strings.Contains(last, "[[bedrock:expire]]") && !s.expired[rec.RecordID]:
		s.expired[rec.RecordID] = true
		return nil, false
	case m != nil:
		code, _ := strconv.Atoi(m[1])
		res["error"] = map[string]any{"errorCode": code, "errorMessage": "scripted"}
	default:
		s.made[rec.RecordID]++
		text := "echo " + rec.RecordID[:min(8, len(rec.RecordID))]
		o := map[string]any{"output": map[string]any{"message": map[string]any{"role": "assistant", "content": []map[string]any{{"text": text}}}},
			"stopReason": "end_turn"}
		if !strings.Contains(last, "[[bedrock:nousage]]") {
			o["usage"] = map[string]any{"inputTokens": prompt, "outputTokens": min(2, max(body.InferenceConfig.MaxTokens, 1)), "totalTokens": prompt + 2}
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

func reply(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

func fail(w http.ResponseWriter, status int, code string) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Amzn-ErrorType", code)
	w.WriteHeader(status)
	_, _ = io.WriteString(w, `{"message":"refused"}`)
}
