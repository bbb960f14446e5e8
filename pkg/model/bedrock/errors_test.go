package bedrock_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/aijobs/aijobs/pkg/job"
	"github.com/aijobs/aijobs/pkg/model"
	"github.com/aijobs/aijobs/pkg/model/modeltest"
)

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
	var table []modeltest.ErrorAnswer
	for _, tt := range tests {
		// Recorded answers: status line, headers (X-Amzn-ErrorType names
		// the code), blank line, JSON body.
		table = append(table, modeltest.Recorded(t, modeltest.ErrorAnswer{Name: tt.file, Class: tt.class, Detail: tt.detail}, tt.file))
	}
	// The SDK would retry a 429, 500 or 503 on its own: it must not.
	wire().RunErrors(t, table)
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
			if want := (model.Usage{InputTokens: modeltest.PromptCeiling, OutputTokens: 2, Estimated: true}); me.Usage != want {
				t.Fatalf("usage %+v, want %+v: the deltas streamed are billed", me.Usage, want)
			}
			if n := requests.Load(); n != 1 {
				t.Fatalf("%d requests, want exactly 1 (no retries)", n)
			}
		})
	}
}

// A client the caller configured follows no redirect either (the suite
// checks the SDK's default one): a redirected POST is a second billed call.
func TestCallersClientFollowsNoRedirect(t *testing.T) {
	var requests atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		_, _ = io.Copy(io.Discard, r.Body)
		http.Redirect(w, r, "/elsewhere"+r.URL.Path, http.StatusTemporaryRedirect)
	}))
	defer srv.Close()
	c := wire().Client(t, srv.URL, false, &http.Client{})
	_, err := c.Generate(context.Background(), request())
	if me := asModelError(t, err); me.Class != job.Internal || me.Detail != "http 307" {
		t.Fatalf("class %q detail %q, want internal, http 307", me.Class, me.Detail)
	}
	if n := requests.Load(); n != 1 {
		t.Fatalf("%d requests, want 1", n)
	}
}
