package bedrock_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/aijobs/aijobs/pkg/job"
	"github.com/aijobs/aijobs/pkg/model"
	"github.com/aijobs/aijobs/pkg/model/bedrock"
)

// fixture is a recorded Bedrock error answer: status line, headers
// (X-Amzn-ErrorType names the code), blank line, JSON body.
type fixture struct {
	status  int
	header  http.Header
	body    []byte
	message string // the body's message: it must never leak
}

func readFixture(t *testing.T, name string) fixture {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("testdata", "errors", name))
	if err != nil {
		t.Fatalf("read fixture: %v", err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(bytes.NewReader(raw)), nil)
	if err != nil {
		t.Fatalf("parse fixture %s: %v", name, err)
	}
	defer resp.Body.Close()
	f := fixture{status: resp.StatusCode, header: resp.Header}
	if f.body, err = io.ReadAll(resp.Body); err != nil {
		t.Fatalf("read fixture body: %v", err)
	}
	var b struct{ Message string }
	if json.Unmarshal(f.body, &b) == nil {
		f.message = b.Message
	}
	return f
}

func TestErrorAnswers(t *testing.T) {
	tests := []struct {
		file   string // under testdata/errors
		class  job.ErrorClass
		detail string
	}{
		{"429_ThrottlingException.http", job.RateLimited, "http 429 ThrottlingException"},
		{"429_ThrottlingException_tokens.http", job.RateLimited, "http 429 ThrottlingException"},
		{"429_ModelNotReadyException.http", job.Overloaded, "http 429 ModelNotReadyException"},
		{"503_ServiceUnavailableException.http", job.Overloaded, "http 503 ServiceUnavailableException"},
		{"408_ModelTimeoutException.http", job.Timeout, "http 408 ModelTimeoutException"},
		{"500_InternalServerException.http", job.ProviderError, "http 500 InternalServerException"},
		{"424_ModelErrorException.http", job.ProviderError, "http 424 ModelErrorException"},
		{"400_ValidationException.http", job.InvalidRequest, "http 400 ValidationException"},
		{"400_ValidationException_model_id.http", job.InvalidRequest, "http 400 ValidationException"},
		{"400_ValidationException_input_too_long.http", job.ContextLengthExceeded, "http 400 ValidationException"},
		{"400_ValidationException_too_many_input_tokens.http", job.ContextLengthExceeded, "http 400 ValidationException"},
		{"400_ValidationException_prompt_too_long.http", job.ContextLengthExceeded, "http 400 ValidationException"},
		{"400_ValidationException_max_tokens.http", job.ContextLengthExceeded, "http 400 ValidationException"},
		{"400_ValidationException_nova.http", job.ContextLengthExceeded, "http 400 ValidationException"},
		{"400_ServiceQuotaExceededException.http", job.QuotaExhausted, "http 400 ServiceQuotaExceededException"},
		{"403_AccessDeniedException.http", job.Auth, "http 403 AccessDeniedException"},
		{"403_UnrecognizedClientException.http", job.Auth, "http 403 UnrecognizedClientException"},
		{"403_ExpiredTokenException.http", job.Auth, "http 403 ExpiredTokenException"},
		{"403_InvalidSignatureException.http", job.Auth, "http 403 InvalidSignatureException"},
		{"404_ResourceNotFoundException.http", job.InvalidRequest, "http 404 ResourceNotFoundException"},
		{"400_UnknownNewException.http", job.Internal, "http 400 SomeFutureException"},
		// A proxy's page names no code: the status decides.
		{"502_gateway.http", job.ProviderError, "http 502"},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			f := readFixture(t, tt.file)
			var requests atomic.Int32
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				requests.Add(1)
				_, _ = io.Copy(io.Discard, r.Body)
				for k, v := range f.header {
					w.Header()[k] = v
				}
				w.WriteHeader(f.status)
				_, _ = w.Write(f.body)
			}))
			defer srv.Close()
			for _, stream := range []bool{false, true} {
				requests.Store(0)
				_, err := newClient(t, srv.URL, stream).Generate(context.Background(), request())
				secrets := []string{}
				if f.message != "" {
					secrets = append(secrets, f.message, f.message[:len(f.message)/2])
				}
				me := asModelError(t, err, secrets...)
				if me.Class != tt.class || me.Detail != tt.detail {
					t.Fatalf("stream=%v: class %q detail %q, want %q %q (%v)", stream, me.Class, me.Detail, tt.class, tt.detail, err)
				}
				if me.Usage != (model.Usage{}) {
					t.Fatalf("a refused call is billed: %+v", me.Usage)
				}
				// The SDK would retry a 429, 500 or 503 on its own: it must not.
				if n := requests.Load(); n != 1 {
					t.Fatalf("stream=%v: %d requests, want exactly 1 (no retries)", stream, n)
				}
			}
		})
	}
}

// An exception inside the event stream is classified like the API error of
// the same name and bills what was streamed before it.
func TestStreamExceptions(t *testing.T) {
	tests := []struct {
		typ     string // the :exception-type header
		message string
		class   job.ErrorClass
		detail  string
	}{
		{"throttlingException", "Too many tokens, please wait before trying again.", job.RateLimited, "stream ThrottlingException"},
		{"serviceUnavailableException", "Bedrock is unable to process your request.", job.Overloaded, "stream ServiceUnavailableException"},
		{"internalServerException", "The system encountered an unexpected error during processing.", job.ProviderError, "stream InternalServerException"},
		{"modelStreamErrorException", "The model stream failed while generating about SECRET-PROMPT.", job.ProviderError, "stream ModelStreamErrorException"},
		{"validationException", "Malformed input request: SECRET-PROMPT, please reformat your input and try again.", job.InvalidRequest, "stream ValidationException"},
		{"validationException", "Input is too long for requested model.", job.ContextLengthExceeded, "stream ValidationException"},
		{"someFutureException", "Something new about SECRET-PROMPT.", job.Internal, "stream someFutureException"},
	}
	for _, tt := range tests {
		t.Run(tt.typ+" "+string(tt.class), func(t *testing.T) {
			var requests atomic.Int32
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				requests.Add(1)
				_, _ = io.Copy(io.Discard, r.Body)
				s := startStream(w)
				s.messageStart()
				s.delta("Once")
				s.delta(" upon")
				payload := fmt.Sprintf(`{"message":%q}`, tt.message)
				if tt.typ == "modelStreamErrorException" {
					payload = fmt.Sprintf(`{"message":%q,"originalStatusCode":500,"originalMessage":%q}`, tt.message, prompt)
				}
				s.exception(tt.typ, payload)
			}))
			defer srv.Close()
			_, err := newClient(t, srv.URL, true).Generate(context.Background(), request())
			me := asModelError(t, err, tt.message, tt.message[:len(tt.message)/2])
			if me.Class != tt.class || me.Detail != tt.detail {
				t.Fatalf("class %q detail %q, want %q %q (%v)", me.Class, me.Detail, tt.class, tt.detail, err)
			}
			if want := (model.Usage{InputTokens: promptCeiling, OutputTokens: 2, Estimated: true}); me.Usage != want {
				t.Fatalf("usage %+v, want %+v: the deltas streamed are billed", me.Usage, want)
			}
			if n := requests.Load(); n != 1 {
				t.Fatalf("%d requests, want exactly 1 (no retries)", n)
			}
		})
	}
}

func TestRedirectNotFollowed(t *testing.T) {
	var requests atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		_, _ = io.Copy(io.Discard, r.Body)
		http.Redirect(w, r, "/elsewhere"+r.URL.Path, http.StatusTemporaryRedirect)
	}))
	defer srv.Close()
	for _, client := range []aws.HTTPClient{nil, &http.Client{}} {
		requests.Store(0)
		cfg := awsConfig()
		cfg.HTTPClient = client
		c, err := bedrock.New(bedrock.Config{AWS: cfg, Endpoint: srv.URL, Model: modelID})
		if err != nil {
			t.Fatalf("New: %v", err)
		}
		_, err = c.Generate(context.Background(), request())
		if me := asModelError(t, err); me.Class != job.Internal || me.Detail != "http 307" {
			t.Fatalf("client %T: class %q detail %q, want internal, http 307", client, me.Class, me.Detail)
		}
		if n := requests.Load(); n != 1 {
			t.Fatalf("client %T: %d requests, want 1: a redirected POST is a second billed call", client, n)
		}
	}
}

// A request that never reached Bedrock cost nothing.
func TestNeverSent(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listen: %v", err)
	}
	refused := "http://" + l.Addr().String()
	_ = l.Close()
	var requests atomic.Int32
	tlsSrv := httptest.NewUnstartedServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { requests.Add(1) }))
	tlsSrv.Config.ErrorLog = log.New(io.Discard, "", 0) // the refused handshake is the point
	tlsSrv.StartTLS()
	defer tlsSrv.Close()
	for _, stream := range []bool{false, true} {
		for name, url := range map[string]string{"connection refused": refused, "TLS certificate not trusted": tlsSrv.URL} {
			_, err = newClient(t, url, stream).Generate(context.Background(), capped())
			if me := asModelError(t, err); me.Class != job.Network || me.Usage != (model.Usage{}) {
				t.Fatalf("%s, stream=%v: class %q usage %+v, want network and nothing billed (%v)", name, stream, me.Class, me.Usage, err)
			}
		}
	}
	if n := requests.Load(); n != 0 {
		t.Fatalf("%d requests reached the TLS server", n)
	}
}

// A call Bedrock received and never answered is billed: the worst case
// without a stream (Bedrock finishes the generation and bills it), the
// prompt ceiling for a stream, estimated. That the SDK's requests are
// seen as sent at all shows net/http's trace on the caller's context
// reaches the SDK's HTTP request.
func TestTimeouts(t *testing.T) {
	tests := []struct {
		name     string
		deadline time.Duration  // on the call's context; 0: none
		cancel   time.Duration  // cancel the call's context after this; 0: never
		client   aws.HTTPClient // nil: the SDK's default
		stream   bool
		class    job.ErrorClass
		target   error // what the error must wrap, if anything
		usage    model.Usage
	}{
		{name: "call deadline before headers", deadline: 50 * time.Millisecond, class: job.Timeout, target: context.DeadlineExceeded,
			usage: worstCase},
		{name: "call deadline before stream headers", deadline: 50 * time.Millisecond, stream: true, class: job.Timeout,
			target: context.DeadlineExceeded, usage: model.Usage{InputTokens: promptCeiling, Estimated: true}},
		{name: "call deadline mid stream", deadline: 300 * time.Millisecond, stream: true, class: job.Timeout, target: context.DeadlineExceeded,
			usage: model.Usage{InputTokens: promptCeiling, OutputTokens: 1, Estimated: true}},
		{name: "cancelled before headers", cancel: 50 * time.Millisecond, class: job.Cancelled, target: context.Canceled,
			usage: worstCase},
		{name: "cancelled before stream headers", cancel: 50 * time.Millisecond, stream: true, class: job.Cancelled,
			target: context.Canceled, usage: model.Usage{InputTokens: promptCeiling, Estimated: true}},
		{name: "http client timeout", client: &http.Client{Timeout: 50 * time.Millisecond}, class: job.Timeout, usage: worstCase},
		{name: "response header timeout", class: job.Timeout, usage: worstCase,
			client: &http.Client{Transport: &http.Transport{ResponseHeaderTimeout: 50 * time.Millisecond}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			midStream := tt.usage.OutputTokens > 0 && tt.stream
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				// Reading the whole request lets the server notice the
				// client hanging up, as a real one would.
				_, _ = io.Copy(io.Discard, r.Body)
				if midStream {
					s := startStream(w)
					s.messageStart()
					s.delta("Once")
				}
				select {
				case <-r.Context().Done():
				case <-time.After(10 * time.Second):
				}
			}))
			defer srv.Close()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if tt.cancel > 0 {
				time.AfterFunc(tt.cancel, cancel)
			}
			if tt.deadline > 0 {
				var stop context.CancelFunc
				ctx, stop = context.WithTimeout(ctx, tt.deadline)
				defer stop()
			}
			cfg := awsConfig()
			cfg.HTTPClient = tt.client
			c, err := bedrock.New(bedrock.Config{AWS: cfg, Endpoint: srv.URL, Model: modelID, Stream: tt.stream})
			if err != nil {
				t.Fatalf("New: %v", err)
			}
			start := time.Now()
			_, err = c.Generate(ctx, capped())
			if time.Since(start) > 5*time.Second {
				t.Fatal("the call outlived its timeout")
			}
			me := asModelError(t, err)
			if me.Class != tt.class {
				t.Fatalf("class %q, want %q (%v)", me.Class, tt.class, err)
			}
			if tt.target != nil && !errors.Is(err, tt.target) {
				t.Fatalf("%v does not wrap %v", err, tt.target)
			}
			if me.Usage != tt.usage {
				t.Fatalf("usage %+v, want %+v", me.Usage, tt.usage)
			}
		})
	}
}
