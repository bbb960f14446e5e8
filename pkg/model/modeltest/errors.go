package modeltest

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aijobs/aijobs/pkg/job"
	"github.com/aijobs/aijobs/pkg/model"
)

// ErrorAnswer is one row of a provider's error table: an answer its server
// gives instead of a generation (a recorded fixture, as the provider sends
// it), and what the provider must make of it.
type ErrorAnswer struct {
	Name   string
	Status int
	Header http.Header
	Body   []byte
	// Message is the body's message: it may quote the prompt, so no part
	// of it may show in the error.
	Message string
	Class   job.ErrorClass
	Detail  string
}

// check holds an error to the contract (see generate).
func (s suite) check(t *testing.T, err error, secrets ...string) {
	t.Helper()
	Classified(t, err, append(secrets, s.secret)...)
}

// Classified fails t unless err is what every provider's error must be: a
// *model.Error of a valid class that model.Classify reads back with its
// usage, whose detail fits a job record (at most 100 bytes), and which
// shows neither Prompt, anything marked SECRET, nor any of secrets. It
// returns the error, for the provider's own tests to look further.
func Classified(t testing.TB, err error, secrets ...string) *model.Error {
	t.Helper()
	me := modelError(t, err)
	if !me.Class.Valid() {
		t.Fatalf("error %v has class %q", err, me.Class)
	}
	if class, usage := model.Classify(err); class != me.Class || usage != me.Usage {
		t.Fatalf("Classify = %q %+v, want %q %+v", class, usage, me.Class, me.Usage)
	}
	for _, secret := range append(secrets, Prompt, "SECRET") {
		if secret != "" && (strings.Contains(me.Detail, secret) || strings.Contains(err.Error(), secret)) {
			t.Fatalf("error leaks %q: detail %q, error %q", secret, me.Detail, err.Error())
		}
	}
	if len(me.Detail) > 100 {
		t.Fatalf("detail is %d bytes, want at most 100: %q", len(me.Detail), me.Detail)
	}
	return me
}

func modelError(t testing.TB, err error) *model.Error {
	t.Helper()
	var me *model.Error
	if !errors.As(err, &me) {
		t.Fatalf("error %v (%T) is not a *model.Error", err, err)
	}
	return me
}

// Recorded is a with the answer recorded in testdata/errors/file: a whole
// HTTP response when the name ends in .http (its status and headers then
// replace a's), else its body alone. Message is the body's message, as
// OpenAI and Anthropic ({"error": {"message": ...}}) or Bedrock
// ({"message": ...}) put it.
func Recorded(t testing.TB, a ErrorAnswer, file string) ErrorAnswer {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("testdata", "errors", file))
	if err != nil {
		t.Fatalf("read fixture: %v", err)
	}
	a.Body = raw
	if strings.HasSuffix(file, ".http") {
		resp, err := http.ReadResponse(bufio.NewReader(bytes.NewReader(raw)), nil)
		if err != nil {
			t.Fatalf("parse fixture %s: %v", file, err)
		}
		defer resp.Body.Close()
		a.Status, a.Header = resp.StatusCode, resp.Header
		if a.Body, err = io.ReadAll(resp.Body); err != nil {
			t.Fatalf("read fixture %s: %v", file, err)
		}
	}
	var b struct {
		Message string
		Error   struct{ Message string }
	}
	if json.Unmarshal(a.Body, &b) == nil {
		a.Message = cmp.Or(b.Error.Message, b.Message)
	}
	return a
}

// RunErrors holds a provider to its error table: each answer, to a call
// streamed and not, is classified and detailed as the row says, billed
// nothing (an error status is no generation), reached by one request
// only (the provider retries nothing, the SDK's retries included), and
// shows no part of its message.
func (wi Wire) RunErrors(t *testing.T, table []ErrorAnswer) {
	s := suite{secret: wi.Secret}
	for _, tt := range table {
		t.Run(tt.Name, func(t *testing.T) {
			var secrets []string
			if tt.Message != "" {
				secrets = []string{tt.Message, tt.Message[:len(tt.Message)/2]}
			}
			for _, stream := range []bool{false, true} {
				srv := serve(t, func(w http.ResponseWriter, _ *http.Request) {
					for k, v := range tt.Header {
						w.Header()[k] = v
					}
					w.WriteHeader(tt.Status)
					_, _ = w.Write(tt.Body)
				})
				c := srv.call(wi.Client(t, srv.URL, stream, nil), Call{})
				_, _, err := s.generate(t, context.Background(), c, nil, secrets...)
				me := modelError(t, err)
				if me.Class != tt.Class || me.Detail != tt.Detail {
					t.Fatalf("stream=%v: class %q detail %q, want %q %q (%v)", stream, me.Class, me.Detail, tt.Class, tt.Detail, err)
				}
				if me.Usage != (model.Usage{}) {
					t.Fatalf("stream=%v: an error answer is billed %+v", stream, me.Usage)
				}
				s.once(t, c)
			}
		})
	}
}
