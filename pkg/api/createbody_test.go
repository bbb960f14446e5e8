package api_test

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/aijobs/aijobs/pkg/api"
	"github.com/aijobs/aijobs/pkg/job"
	"github.com/aijobs/aijobs/pkg/settings"
	"github.com/aijobs/aijobs/pkg/wire"
)

// testLimits are the shipped limits with bounds a test can reach.
func testLimits() job.Limits {
	l := settings.Defaults().Limits
	l.Models = []string{"default", "fast"}
	l.MaxMessages, l.MaxMetadataBytes = 3, 64
	return l
}

const okInput = `{"messages":[{"role":"user","content":"hi"}]}`

// body builds a create body around okInput with extra top-level members.
func body(extra string) string {
	if extra == "" {
		return `{"input":` + okInput + `}`
	}
	return `{"input":` + okInput + `,` + extra + `}`
}

// withInput builds a create body with the given input members.
func withInput(members string) string { return `{"input":{` + members + `}}` }

func TestParseCreateDefaults(t *testing.T) {
	l := testLimits()
	b := body("")
	r, err := api.ParseCreate("tenant-a", "key-1", []byte(b), l)
	if err != nil {
		t.Fatal(err)
	}
	hash, _ := job.InputHash([]byte(b))
	if r.Tenant != "tenant-a" || r.RequestKey != "key-1" || r.InputHash != hash {
		t.Errorf("identity: %+v", r)
	}
	if r.Model != "default" || r.Deadline != 15*time.Minute || r.Budget != job.Cents(50) || r.MaxAttempts != 4 || r.Metadata != nil {
		t.Errorf("defaults: model %q deadline %s budget %s attempts %d metadata %s", r.Model, r.Deadline, r.Budget, r.MaxAttempts, r.Metadata)
	}
	if len(r.Input.Messages) != 1 || r.Input.MaxTokens != 1024 || r.Input.Temperature != nil {
		t.Errorf("input: %+v", r.Input)
	}
	if want := `{"messages":[{"role":"user","content":"hi"}],"max_tokens":1024}`; string(r.InputJSON) != want {
		t.Errorf("InputJSON = %s, want %s", r.InputJSON, want)
	}
}

func TestParseCreateAccepts(t *testing.T) {
	l := testLimits()
	tests := []struct {
		name  string
		body  string
		check func(job.CreateRequest) bool
	}{
		{"model", body(`"model":"fast"`), func(r job.CreateRequest) bool { return r.Model == "fast" }},
		{"model null is the default", body(`"model":null`), func(r job.CreateRequest) bool { return r.Model == "default" }},
		{"deadline 1", body(`"deadline_seconds":1`), func(r job.CreateRequest) bool { return r.Deadline == time.Second }},
		{"deadline max", body(`"deadline_seconds":86400`), func(r job.CreateRequest) bool { return r.Deadline == 24*time.Hour }},
		{"deadline null is the default", body(`"deadline_seconds":null`), func(r job.CreateRequest) bool { return r.Deadline == 15*time.Minute }},
		{"max_attempts 1", body(`"max_attempts":1`), func(r job.CreateRequest) bool { return r.MaxAttempts == 1 }},
		{"max_attempts max", body(`"max_attempts":8`), func(r job.CreateRequest) bool { return r.MaxAttempts == 8 }},
		{"budget whole", body(`"budget_cents":50`), func(r job.CreateRequest) bool { return r.Budget == job.Cents(50) }},
		{"budget decimals", body(`"budget_cents":0.000000001`), func(r job.CreateRequest) bool { return r.Budget == 1 }},
		{"budget 12.5", body(`"budget_cents":12.50`), func(r job.CreateRequest) bool { return r.Budget.String() == "12.5" }},
		{"budget max", body(`"budget_cents":10000`), func(r job.CreateRequest) bool { return r.Budget == job.Cents(10_000) }},
		{"max_tokens 1", withInput(`"messages":[{"role":"user","content":"x"}],"max_tokens":1`), func(r job.CreateRequest) bool { return r.Input.MaxTokens == 1 }},
		{"max_tokens max", withInput(`"messages":[{"role":"user","content":"x"}],"max_tokens":32768`), func(r job.CreateRequest) bool { return r.Input.MaxTokens == 32768 }},
		{"temperature 0", withInput(`"messages":[{"role":"user","content":"x"}],"temperature":0`), func(r job.CreateRequest) bool { return r.Input.Temperature != nil && *r.Input.Temperature == 0 }},
		{"temperature 2", withInput(`"messages":[{"role":"user","content":"x"}],"temperature":2`), func(r job.CreateRequest) bool { return *r.Input.Temperature == 2 }},
		{"every role, max messages", withInput(`"messages":[{"role":"system","content":"s"},{"role":"user","content":"u"},{"role":"assistant","content":"a"}]`),
			func(r job.CreateRequest) bool { return len(r.Input.Messages) == 3 }},
		{"metadata", body(`"metadata": {"any": ["json", 1]} `), func(r job.CreateRequest) bool { return string(r.Metadata) == `{"any": ["json", 1]}` }},
		{"metadata at the limit", body(`"metadata":{"k":"` + strings.Repeat("x", 64-8) + `"}`), func(r job.CreateRequest) bool { return len(r.Metadata) == 64 }},
		{"metadata null", body(`"metadata":null`), func(r job.CreateRequest) bool { return r.Metadata == nil }},
		{"surrounding whitespace", "\n\t " + body("") + " \n", func(r job.CreateRequest) bool { return r.Model == "default" }},
		{"unicode content", withInput(`"messages":[{"role":"user","content":"日本 <b>&</b> 🙂"}]`), func(r job.CreateRequest) bool { return r.Input.Messages[0].Content == "日本 <b>&</b> 🙂" }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := api.ParseCreate("t", "k", []byte(tt.body), l)
			if err != nil {
				t.Fatalf("ParseCreate(%s): %v", tt.body, err)
			}
			if !tt.check(r) {
				t.Errorf("ParseCreate(%s) = %+v", tt.body, r)
			}
		})
	}
}

func TestParseCreateRefuses(t *testing.T) {
	l := testLimits()
	msg := func(role, content string) string {
		return withInput(`"messages":[{"role":` + role + `,"content":` + content + `}]`)
	}
	bigMeta := body(`"metadata":{"k":"` + strings.Repeat("x", 64-8+1) + `"}`)
	huge := body(`"metadata":{"k":"` + strings.Repeat("x", api.MaxBodyBytes) + `"}`)
	tests := []struct {
		name, tenant, key, body string
		code                    wire.Code
		field                   string
	}{
		{name: "no tenant", tenant: "", body: body(""), code: wire.CodeUnauthorized},
		{name: "no tenant beats a bad key", tenant: "", key: "", body: "x", code: wire.CodeUnauthorized},
		{name: "empty key", key: "", body: body(""), field: "Idempotency-Key"},
		{name: "256-character key", key: strings.Repeat("k", 256), body: body(""), field: "Idempotency-Key"},
		{name: "key with a newline", key: "a\nb", body: body(""), field: "Idempotency-Key"},
		{name: "key with a tab", key: "a\tb", body: body(""), field: "Idempotency-Key"},
		{name: "key with DEL", key: "a\x7fb", body: body(""), field: "Idempotency-Key"},
		{name: "key with NUL", key: "a\x00b", body: body(""), field: "Idempotency-Key"},
		{name: "non-ASCII key", key: "clé", body: body(""), field: "Idempotency-Key"},
		{name: "body too large", body: huge, code: wire.CodePayloadTooLarge},
		{name: "empty body", body: ""},
		{name: "array", body: `[` + body("") + `]`},
		{name: "string", body: `"x"`},
		{name: "null", body: `null`},
		{name: "malformed", body: `{"input":`},
		{name: "trailing data", body: body("") + ` {}`},
		// Parsers disagree on which of two equal names counts: refused at
		// every depth rather than read differently by a proxy.
		{name: "duplicate top-level field", body: `{"input":{"messages":[{"role":"user","content":"a"}]},"input":{"messages":[{"role":"user","content":"b"}]}}`, field: "input"},
		{name: "duplicate field in a message", body: withInput(`"messages":[{"role":"user","content":"a","content":"b"}]`), field: "content"},
		{name: "duplicate field in metadata", body: body(`"metadata":{"a":{"k":1,"k":2}}`), field: "k"},
		{name: "trailing garbage", body: body("") + `x`},
		{name: "invalid UTF-8", body: `{"input":{"messages":[{"role":"user","content":"` + "\xff" + `"}]}}`},
		{name: "unknown top-level field", body: body(`"priority":1`), field: "priority"},
		{name: "top-level field in another case", body: `{"Input":` + okInput + `}`, field: "Input"},
		{name: "option in another case", body: body(`"MAX_ATTEMPTS":2`), field: "MAX_ATTEMPTS"},
		{name: "unknown input field", body: withInput(`"messages":[{"role":"user","content":"x"}],"top_k":1`), field: "input.top_k"},
		{name: "input field in another case", body: withInput(`"messages":[{"role":"user","content":"x"}],"Max_Tokens":5`), field: "input.Max_Tokens"},
		{name: "top_p above 1", body: withInput(`"messages":[{"role":"user","content":"x"}],"top_p":1.5`), field: "input.top_p"},
		{name: "top_p a string", body: withInput(`"messages":[{"role":"user","content":"x"}],"top_p":"0.5"`), field: "input.top_p"},
		{name: "five stop sequences", body: withInput(`"messages":[{"role":"user","content":"x"}],"stop":["a","b","c","d","e"]`), field: "input.stop"},
		{name: "stop a string", body: withInput(`"messages":[{"role":"user","content":"x"}],"stop":"END"`), field: "input.stop"},
		{name: "seed a fraction", body: withInput(`"messages":[{"role":"user","content":"x"}],"seed":1.5`), field: "input.seed"},
		{name: "unknown effort", body: withInput(`"messages":[{"role":"user","content":"x"}],"reasoning":{"effort":"max"}`), field: "input.reasoning.effort"},
		{name: "reasoning field in another case", body: withInput(`"messages":[{"role":"user","content":"x"}],"reasoning":{"Effort":"low"}`), field: "input.reasoning.Effort"},
		{name: "unknown reasoning field", body: withInput(`"messages":[{"role":"user","content":"x"}],"reasoning":{"summary":"auto"}`), field: "input.reasoning.summary"},
		{name: "budget at max_tokens", body: withInput(`"messages":[{"role":"user","content":"x"}],"max_tokens":2048,"reasoning":{"budget_tokens":2048}`), field: "input.reasoning.budget_tokens"},
		{name: "unknown message field", body: withInput(`"messages":[{"role":"user","content":"x"},{"role":"user","content":"y","name":"z"}]`), field: "input.messages[1].name"},
		{name: "message field in another case", body: withInput(`"messages":[{"ROLE":"user","content":"x"}]`), field: "input.messages[0].ROLE"},
		{name: "unknown model", body: body(`"model":"gpt-9"`), field: "model"},
		{name: "empty model", body: body(`"model":""`), field: "model"},
		{name: "model not a string", body: body(`"model":5`), field: "model"},
		{name: "no input", body: `{}`, field: "input"},
		{name: "input null", body: `{"input":null}`, field: "input"},
		{name: "input not an object", body: `{"input":"hi"}`, field: "input"},
		{name: "input array", body: `{"input":[]}`, field: "input"},
		{name: "no messages", body: withInput(``), field: "input.messages"},
		{name: "empty messages", body: withInput(`"messages":[]`), field: "input.messages"},
		{name: "messages null", body: withInput(`"messages":null`), field: "input.messages"},
		{name: "too many messages", body: withInput(`"messages":[{"role":"user","content":"1"},{"role":"user","content":"2"},{"role":"user","content":"3"},{"role":"user","content":"4"}]`), field: "input.messages"},
		{name: "bad role", body: msg(`"tool"`, `"x"`), field: "input.messages[0].role"},
		{name: "role in another case", body: msg(`"User"`, `"x"`), field: "input.messages[0].role"},
		{name: "empty role", body: msg(`""`, `"x"`), field: "input.messages[0].role"},
		{name: "empty content", body: withInput(`"messages":[{"role":"user","content":"x"},{"role":"user","content":""}]`), field: "input.messages[1].content"},
		{name: "missing content", body: withInput(`"messages":[{"role":"user"}]`), field: "input.messages[0].content"},
		{name: "content not a string", body: msg(`"user"`, `5`), field: "input.messages[0].content"},
		{name: "max_tokens negative", body: withInput(`"messages":[{"role":"user","content":"x"}],"max_tokens":-1`), field: "input.max_tokens"},
		{name: "max_tokens above max", body: withInput(`"messages":[{"role":"user","content":"x"}],"max_tokens":32769`), field: "input.max_tokens"},
		{name: "max_tokens fractional", body: withInput(`"messages":[{"role":"user","content":"x"}],"max_tokens":1.5`), field: "input.max_tokens"},
		{name: "max_tokens string", body: withInput(`"messages":[{"role":"user","content":"x"}],"max_tokens":"5"`), field: "input.max_tokens"},
		{name: "temperature negative", body: withInput(`"messages":[{"role":"user","content":"x"}],"temperature":-0.1`), field: "input.temperature"},
		{name: "temperature above 2", body: withInput(`"messages":[{"role":"user","content":"x"}],"temperature":2.01`), field: "input.temperature"},
		{name: "temperature string", body: withInput(`"messages":[{"role":"user","content":"x"}],"temperature":"1"`), field: "input.temperature"},
		{name: "deadline 0", body: body(`"deadline_seconds":0`), field: "deadline_seconds"},
		{name: "deadline negative", body: body(`"deadline_seconds":-1`), field: "deadline_seconds"},
		{name: "deadline max+1", body: body(`"deadline_seconds":86401`), field: "deadline_seconds"},
		{name: "deadline 1.5", body: body(`"deadline_seconds":1.5`), field: "deadline_seconds"},
		{name: "deadline 1.0", body: body(`"deadline_seconds":1.0`), field: "deadline_seconds"},
		{name: "deadline 1e3", body: body(`"deadline_seconds":1e3`), field: "deadline_seconds"},
		{name: "deadline string", body: body(`"deadline_seconds":"10"`), field: "deadline_seconds"},
		{name: "deadline bool", body: body(`"deadline_seconds":true`), field: "deadline_seconds"},
		{name: "deadline object", body: body(`"deadline_seconds":{}`), field: "deadline_seconds"},
		{name: "deadline overflows int", body: body(`"deadline_seconds":99999999999999999999999`), field: "deadline_seconds"},
		{name: "max_attempts 0", body: body(`"max_attempts":0`), field: "max_attempts"},
		{name: "max_attempts max+1", body: body(`"max_attempts":9`), field: "max_attempts"},
		{name: "max_attempts 2.5", body: body(`"max_attempts":2.5`), field: "max_attempts"},
		{name: "max_attempts string", body: body(`"max_attempts":"2"`), field: "max_attempts"},
		{name: "budget 0", body: body(`"budget_cents":0`), field: "budget_cents"},
		{name: "budget negative", body: body(`"budget_cents":-1`), field: "budget_cents"},
		{name: "budget above max", body: body(`"budget_cents":10000.000000001`), field: "budget_cents"},
		{name: "budget 10 decimals", body: body(`"budget_cents":1.0000000001`), field: "budget_cents"},
		{name: "budget exponent", body: body(`"budget_cents":5e1`), field: "budget_cents"},
		{name: "budget string", body: body(`"budget_cents":"50"`), field: "budget_cents"},
		{name: "metadata string", body: body(`"metadata":"x"`), field: "metadata"},
		{name: "metadata array", body: body(`"metadata":[1]`), field: "metadata"},
		{name: "metadata number", body: body(`"metadata":1`), field: "metadata"},
		{name: "metadata oversized", body: bigMeta, field: "metadata"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tenant, key, code := tt.tenant, tt.key, tt.code
			if tenant == "" && code != wire.CodeUnauthorized {
				tenant = "t"
			}
			if key == "" && tt.field != "Idempotency-Key" && code != wire.CodeUnauthorized {
				key = "k"
			}
			if code == "" {
				code = wire.CodeInvalidRequest
			}
			_, err := api.ParseCreate(tenant, key, []byte(tt.body), l)
			var e *api.Error
			if !errors.As(err, &e) {
				t.Fatalf("ParseCreate(%.80s) = %v, want an *api.Error", tt.body, err)
			}
			if e.Code != code || e.Field != tt.field {
				t.Errorf("ParseCreate(%.80s) = code %q field %q (%v), want code %q field %q", tt.body, e.Code, e.Field, e, code, tt.field)
			}
			if e.Message == "" {
				t.Error("no caller-safe message")
			}
		})
	}
}

func TestParseCreateKeyAndBodyBounds(t *testing.T) {
	l := testLimits()
	if _, err := api.ParseCreate("t", strings.Repeat("k", wire.MaxKeyLength), []byte(body("")), l); err != nil {
		t.Errorf("255-character key refused: %v", err)
	}
	if _, err := api.ParseCreate("t", " ~!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}", []byte(body("")), l); err != nil {
		t.Errorf("printable ASCII key refused: %v", err)
	}
	// A body of exactly MaxBodyBytes is parsed (here refused for its metadata, not its size).
	b := body(`"metadata":{"k":"`)
	b += strings.Repeat("x", api.MaxBodyBytes-len(b)-3) + `"}}`
	if len(b) != api.MaxBodyBytes {
		t.Fatalf("len %d", len(b))
	}
	if _, err := api.ParseCreate("t", "k", []byte(b), l); code(err) != wire.CodeInvalidRequest {
		t.Errorf("body of MaxBodyBytes: %v, want invalid_request (metadata)", err)
	}
	if _, err := api.ParseCreate("t", "k", []byte(b+" "), l); code(err) != wire.CodePayloadTooLarge {
		t.Errorf("body of MaxBodyBytes+1: %v, want payload_too_large", err)
	}
}

// code is the code of an *api.Error, "" for any other error.
func code(err error) wire.Code {
	var e *api.Error
	if errors.As(err, &e) {
		return e.Code
	}
	return ""
}

// TestStoredInputIsNoLargerThanSent: HTML characters are kept literally, so
// a 250 KB body of "<" is not stored as 1.5 MB of "\u003c" (the defaults
// applied, such as max_tokens, add a few bytes).
func TestStoredInputIsNoLargerThanSent(t *testing.T) {
	content := strings.Repeat("<&>", 60_000)
	body := `{"input":{"messages":[{"role":"user","content":"` + content + `"}]}}`
	r, err := api.ParseCreate("t", "k", []byte(body), settings.Defaults().Limits)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.InputJSON) > len(body)+32 || !strings.Contains(string(r.InputJSON), "<&>") {
		t.Fatalf("stored input is %d bytes for a %d-byte body", len(r.InputJSON), len(body))
	}
}

// TestEveryMemberOfTheBodyIsRead: the body's members are those of
// wire.CreateBody, the type pkg/client sends; the decoder reads each by
// name, so a member added there and not read here would be silently
// dropped. A value of the wrong kind for each must be refused naming it.
func TestEveryMemberOfTheBodyIsRead(t *testing.T) {
	typ := reflect.TypeFor[wire.CreateBody]()
	for i := range typ.NumField() {
		name, _, _ := strings.Cut(typ.Field(i).Tag.Get("json"), ",")
		b := body(`"` + name + `":"x"`)
		if name == "input" {
			b = `{"input":"x"}`
		}
		_, err := api.ParseCreate("t", "k", []byte(b), testLimits())
		var e *api.Error
		if !errors.As(err, &e) || e.Field != name {
			t.Errorf("%s: %v, want a refusal naming %s", b, err, name)
		}
	}
}

// The shipped limits accept the design's example request.
func TestDefaultLimitsAcceptTheDesignExample(t *testing.T) {
	body := `{"model": "default", "input": {"messages": [{"role": "user", "content": "..."}], "max_tokens": 256},
 "deadline_seconds": 900, "budget_cents": 50, "max_attempts": 4, "metadata": {"any": "json"}}`
	r, err := api.ParseCreate("t", "k", []byte(body), settings.Defaults().Limits)
	if err != nil {
		t.Fatal(err)
	}
	if r.Deadline != 900*time.Second || r.Budget != job.Cents(50) || r.MaxAttempts != 4 || r.Input.MaxTokens != 256 {
		t.Errorf("ParseCreate = %+v", r)
	}
}
