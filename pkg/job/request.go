package job

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// Limits are the configured defaults and upper bounds of a create request.
// Every option a caller may set has a bound, so no request can ask for an
// unbounded deadline, budget or number of attempts.
type Limits struct {
	DefaultModel       string
	Models             []string // routes a caller may name
	DefaultDeadline    time.Duration
	MaxDeadline        time.Duration
	DefaultBudget      Nanocents
	MaxBudget          Nanocents
	DefaultMaxAttempts int
	MaxMaxAttempts     int
	DefaultMaxTokens   int
	MaxMaxTokens       int
	MaxMessages        int
	MaxMetadataBytes   int
}

// MaxBodyBytes is the largest create body accepted (DESIGN 6).
const MaxBodyBytes = 256 << 10

// MaxKeyLength bounds the Idempotency-Key header.
const MaxKeyLength = 255

// Message is one chat message of the model input.
type Message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// Input is what the model is asked. It is deliberately small and strict:
// unknown fields are refused rather than silently dropped.
type Input struct {
	Messages    []Message `json:"messages"`
	MaxTokens   int       `json:"max_tokens,omitempty"`
	Temperature *float64  `json:"temperature,omitempty"`
}

// createBody is the top level of a create body. The numbers stay raw so a
// quoted number ("10") is refused: encoding/json would accept a string into a
// json.Number field.
type createBody struct {
	Model           *string          `json:"model"`
	Input           *json.RawMessage `json:"input"`
	DeadlineSeconds *json.RawMessage `json:"deadline_seconds"`
	BudgetCents     *json.RawMessage `json:"budget_cents"`
	MaxAttempts     *json.RawMessage `json:"max_attempts"`
	Metadata        *json.RawMessage `json:"metadata"`
}

// The member names each object of a create body may hold, matched exactly:
// encoding/json matches names case-insensitively, so without this check
// "Input" or "MAX_ATTEMPTS" would pass for a known field (and hash as a
// different body than the same request spelled correctly).
var (
	bodyFields    = []string{"model", "input", "deadline_seconds", "budget_cents", "max_attempts", "metadata"}
	inputFields   = []string{"messages", "max_tokens", "temperature"}
	messageFields = []string{"role", "content"}
)

// CreateRequest is a validated POST /jobs, defaults applied.
type CreateRequest struct {
	Tenant      string
	RequestKey  string
	InputHash   string
	Model       string
	Input       Input
	InputJSON   json.RawMessage
	Deadline    time.Duration
	Budget      Nanocents
	MaxAttempts int
	Metadata    json.RawMessage
}

func invalid(field, format string, args ...any) *Error {
	return &Error{Code: CodeInvalidRequest, Field: field, Message: fmt.Sprintf(format, args...)}
}

// ValidKey reports whether k is an acceptable Idempotency-Key: 1..255
// printable ASCII characters.
func ValidKey(k string) bool {
	if len(k) == 0 || len(k) > MaxKeyLength {
		return false
	}
	for i := 0; i < len(k); i++ {
		if k[i] < 0x20 || k[i] > 0x7e {
			return false
		}
	}
	return true
}

// ParseCreate validates a create body against the limits. Every refusal is
// an *Error with code invalid_request (or payload_too_large) naming the field.
func ParseCreate(tenant, key string, body []byte, l Limits) (CreateRequest, error) {
	if tenant == "" {
		return CreateRequest{}, &Error{Code: CodeUnauthorized, Message: "no tenant in the request"}
	}
	if !ValidKey(key) {
		return CreateRequest{}, invalid("Idempotency-Key", "the Idempotency-Key header is required: 1 to %d printable ASCII characters", MaxKeyLength)
	}
	if len(body) > MaxBodyBytes {
		return CreateRequest{}, &Error{Code: CodePayloadTooLarge, Message: fmt.Sprintf("the body is larger than %d bytes", MaxBodyBytes)}
	}
	if !utf8.Valid(body) {
		return CreateRequest{}, invalid("", "the body is not UTF-8")
	}
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return CreateRequest{}, invalid("", "the body must be a JSON object")
	}
	var b createBody
	if err := exactKeys(trimmed, "", bodyFields); err != nil {
		return CreateRequest{}, err
	}
	if k, ok := duplicateKey(trimmed); ok {
		return CreateRequest{}, invalid(truncate(k, 64), "the field %q appears twice in one object", truncate(k, 64))
	}
	if err := strictDecode(trimmed, &b); err != nil {
		return CreateRequest{}, err
	}
	hash, err := InputHash(trimmed)
	if err != nil {
		return CreateRequest{}, invalid("", "the body is not valid JSON")
	}
	r := CreateRequest{Tenant: tenant, RequestKey: key, InputHash: hash}

	r.Model = l.DefaultModel
	if b.Model != nil {
		r.Model = *b.Model
		if !contains(l.Models, r.Model) {
			return r, invalid("model", "unknown model %q; known: %s", truncate(r.Model, 64), strings.Join(l.Models, ", "))
		}
	}
	if b.Input == nil || string(*b.Input) == "null" {
		return r, invalid("input", "input is required")
	}
	if err := parseInput(*b.Input, l, &r); err != nil {
		return r, err
	}
	secs, err := boundedInt("deadline_seconds", b.DeadlineSeconds, int(l.DefaultDeadline/time.Second), 1, int(l.MaxDeadline/time.Second))
	if err != nil {
		return r, err
	}
	r.Deadline = time.Duration(secs) * time.Second
	if r.MaxAttempts, err = boundedInt("max_attempts", b.MaxAttempts, l.DefaultMaxAttempts, 1, l.MaxMaxAttempts); err != nil {
		return r, err
	}
	r.Budget = l.DefaultBudget
	budget, ok, err := number("budget_cents", b.BudgetCents)
	if err != nil {
		return r, err
	}
	if ok {
		v, perr := ParseCents(budget)
		if perr != nil || v <= 0 || v > l.MaxBudget {
			return r, invalid("budget_cents", "budget_cents must be a decimal number of cents above 0 and at most %s", l.MaxBudget)
		}
		r.Budget = v
	}
	if b.Metadata != nil && string(*b.Metadata) != "null" {
		m := bytes.TrimSpace(*b.Metadata)
		if len(m) == 0 || m[0] != '{' {
			return r, invalid("metadata", "metadata must be a JSON object")
		}
		if len(m) > l.MaxMetadataBytes {
			return r, invalid("metadata", "metadata is larger than %d bytes", l.MaxMetadataBytes)
		}
		r.Metadata = json.RawMessage(m)
	}
	return r, nil
}

func parseInput(raw json.RawMessage, l Limits, r *CreateRequest) error {
	t := bytes.TrimSpace(raw)
	if len(t) == 0 || t[0] != '{' {
		return invalid("input", "input must be a JSON object")
	}
	if err := inputKeys(t); err != nil {
		return err
	}
	if err := strictDecode(t, &r.Input); err != nil {
		var e *Error
		if errors.As(err, &e) {
			e.Field = "input" + dotted(e.Field)
		}
		return err
	}
	in := &r.Input
	if len(in.Messages) == 0 {
		return invalid("input.messages", "input.messages must hold at least one message")
	}
	if len(in.Messages) > l.MaxMessages {
		return invalid("input.messages", "input.messages holds more than %d messages", l.MaxMessages)
	}
	for i, m := range in.Messages {
		switch m.Role {
		case "system", "user", "assistant":
		default:
			return invalid(fmt.Sprintf("input.messages[%d].role", i), "role must be system, user or assistant")
		}
		if m.Content == "" {
			return invalid(fmt.Sprintf("input.messages[%d].content", i), "content must be a non-empty string")
		}
	}
	if in.MaxTokens == 0 {
		in.MaxTokens = l.DefaultMaxTokens
	}
	if in.MaxTokens < 1 || in.MaxTokens > l.MaxMaxTokens {
		return invalid("input.max_tokens", "max_tokens must be between 1 and %d", l.MaxMaxTokens)
	}
	if in.Temperature != nil && (*in.Temperature < 0 || *in.Temperature > 2) {
		return invalid("input.temperature", "temperature must be between 0 and 2")
	}
	js, err := EncodeJSON(in)
	if err != nil {
		return fmt.Errorf("encode input: %w", err)
	}
	r.InputJSON = js
	return nil
}

// strictDecode decodes one JSON value, refusing unknown fields, wrong types
// and trailing data, and names the offending field.
func strictDecode(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		var te *json.UnmarshalTypeError
		switch {
		case errors.As(err, &te):
			return invalid(te.Field, "%s has the wrong type (want %s)", te.Field, jsonKind(te.Type))
		case strings.HasPrefix(err.Error(), "json: unknown field "):
			f := strings.Trim(strings.TrimPrefix(err.Error(), "json: unknown field "), `"`)
			return invalid(f, "unknown field %q", truncate(f, 64))
		default:
			return invalid("", "the body is not valid JSON")
		}
	}
	if _, err := dec.Token(); err != io.EOF {
		return invalid("", "the body holds data after the JSON object")
	}
	return nil
}

// duplicateKey finds an object, at any depth, that names a member twice.
// JSON parsers disagree on which one counts (Go takes the last, others the
// first), so a proxy in front of the API could read another request than
// the one hashed and run. Malformed JSON is left to strictDecode.
func duplicateKey(b []byte) (string, bool) {
	type frame struct {
		keys  map[string]bool // nil for an array
		atKey bool
	}
	var stack []*frame
	valueDone := func() {
		if n := len(stack); n > 0 && stack[n-1].keys != nil {
			stack[n-1].atKey = true
		}
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	for {
		t, err := dec.Token()
		if err != nil {
			return "", false
		}
		switch v := t.(type) {
		case json.Delim:
			switch v {
			case '{':
				stack = append(stack, &frame{keys: map[string]bool{}, atKey: true})
			case '[':
				stack = append(stack, &frame{})
			default:
				stack = stack[:len(stack)-1]
				valueDone()
			}
		case string:
			if f := stack[len(stack)-1]; f.keys != nil && f.atKey {
				if f.keys[v] {
					return v, true
				}
				f.keys[v], f.atKey = true, false
				continue
			}
			valueDone()
		default:
			valueDone()
		}
	}
}

// exactKeys refuses a member of the JSON object b whose name is not, byte
// for byte, one of allowed, naming it prefix+name. Anything that is not an
// object is left to strictDecode, which names the type error.
func exactKeys(b []byte, prefix string, allowed []string) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil
	}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil
		}
		k, _ := t.(string)
		if !contains(allowed, k) {
			return invalid(prefix+k, "unknown field %q", truncate(prefix+k, 64))
		}
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return nil
		}
	}
	return nil
}

// inputKeys applies exactKeys to the input object and to each message.
func inputKeys(b []byte) error {
	if err := exactKeys(b, "input.", inputFields); err != nil {
		return err
	}
	var in struct {
		Messages json.RawMessage `json:"messages"`
	}
	var msgs []json.RawMessage
	if json.Unmarshal(b, &in) != nil || json.Unmarshal(in.Messages, &msgs) != nil {
		return nil
	}
	for i, m := range msgs {
		if err := exactKeys(m, fmt.Sprintf("input.messages[%d].", i), messageFields); err != nil {
			return err
		}
	}
	return nil
}

// number returns the literal of an optional JSON number member; absent and
// null are "not given". A string, even one that holds digits, is refused.
func number(field string, raw *json.RawMessage) (string, bool, error) {
	if raw == nil {
		return "", false, nil
	}
	s := string(bytes.TrimSpace(*raw))
	switch {
	case s == "null":
		return "", false, nil
	case s == "" || s[0] != '-' && (s[0] < '0' || s[0] > '9'):
		return "", false, invalid(field, "%s must be a JSON number", field)
	}
	return s, true, nil
}

// jsonKind names a Go kind the way a JSON caller knows it, so no Go type
// name reaches a response.
func jsonKind(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.Struct, reflect.Map:
		return "an object"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64, reflect.Uint, reflect.Uint8,
		reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Float32, reflect.Float64:
		return "a number"
	}
	return "another type"
}

func boundedInt(field string, raw *json.RawMessage, def, lo, hi int) (int, error) {
	s, ok, err := number(field, raw)
	if err != nil {
		return 0, err
	}
	if !ok {
		return def, nil
	}
	v, err := strconv.Atoi(s)
	if err != nil || v < lo || v > hi {
		return 0, invalid(field, "%s must be a whole number between %d and %d", field, lo, hi)
	}
	return v, nil
}

func dotted(f string) string {
	if f == "" {
		return ""
	}
	return "." + f
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

// NewJob is the record a validated request creates at now. Its expiry
// covers the whole deadline plus retention, so an abandoned-by-everyone
// record still disappears eventually.
func (r CreateRequest) NewJob(now time.Time, retention time.Duration) Job {
	now = Millis(now)
	return Job{
		ID:          NewID(r.Tenant, r.RequestKey),
		Tenant:      r.Tenant,
		RequestKey:  r.RequestKey,
		InputHash:   r.InputHash,
		Model:       r.Model,
		Input:       r.InputJSON,
		Metadata:    r.Metadata,
		State:       Queued,
		MaxAttempts: r.MaxAttempts,
		Budget:      r.Budget,
		Deadline:    now.Add(r.Deadline),
		Version:     1,
		CreatedAt:   now,
		UpdatedAt:   now,
		ExpiresAt:   now.Add(r.Deadline + retention),
	}
}
