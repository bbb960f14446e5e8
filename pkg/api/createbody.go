package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/aijobs/aijobs/pkg/job"
	"github.com/aijobs/aijobs/pkg/webhook"
	"github.com/aijobs/aijobs/pkg/wire"
)

// MaxBodyBytes is the largest create body accepted (docs/api.md, "The
// API"; docs/payloads.md, "Limits"): 5 MiB, under Lambda's 6 MB
// synchronous payload, which carries the body inside API Gateway's event
// (its headers, and an escape for each quote and backslash), and under
// API Gateway's 10 MB. A larger input goes through an upload.
const MaxBodyBytes = 5 << 20

// The member names each object of a create body may hold, matched exactly:
// encoding/json matches names case-insensitively, so without this check
// "Input" or "MAX_ATTEMPTS" would pass for a known field (and hash as a
// different body than the same request spelled correctly).
var (
	bodyFields      = jsonNames(reflect.TypeFor[wire.CreateBody]())
	inputFields     = jsonNames(reflect.TypeFor[job.Input]())
	messageFields   = jsonNames(reflect.TypeFor[job.Message]())
	reasoningFields = jsonNames(reflect.TypeFor[job.Reasoning]())
)

// jsonNames are the member names of a struct's JSON, from its tags; an
// embedded struct without a tag lends its own (job.Input's Options), as
// encoding/json does.
func jsonNames(t reflect.Type) []string {
	names := make([]string, 0, t.NumField())
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" || !f.IsExported() {
			// Not a member of the JSON (job.Message's Parts travel as
			// its content): a body naming "-" is refused, not ignored.
			continue
		}
		if f.Anonymous && name == "" && f.Type.Kind() == reflect.Struct {
			names = append(names, jsonNames(f.Type)...)
			continue
		}
		names = append(names, name)
	}
	return names
}

// ParseCreate decodes a create body for tenant under the Idempotency-Key
// key and holds it to the limits. Every refusal is an *Error: code
// invalid_request naming the field, payload_too_large, or unauthorized
// without a tenant. A refusal of a body that is a JSON object comes with
// the request's tenant, key and InputHash set: a rule that depends on the
// configuration (the models, the limits) may refuse today the body of a
// job accepted before, and the caller looks for that job first.
func ParseCreate(tenant, key string, body []byte, l job.Limits) (job.CreateRequest, error) {
	return parseCreate(tenant, key, body, l, MaxBodyBytes)
}

// parseCreate is ParseCreate with the body limit named: a body whose
// input an upload supplied may be as large as the upload.
func parseCreate(tenant, key string, body []byte, l job.Limits, maxBody int) (job.CreateRequest, error) {
	if tenant == "" {
		return job.CreateRequest{}, refuse(wire.CodeUnauthorized, "", "no tenant in the request")
	}
	if !wire.ValidKey(key) {
		return job.CreateRequest{}, invalid("Idempotency-Key", "the Idempotency-Key header is required: 1 to %d printable ASCII characters", wire.MaxKeyLength)
	}
	if len(body) > maxBody {
		return job.CreateRequest{}, bodyTooLarge()
	}
	if !utf8.Valid(body) {
		return job.CreateRequest{}, invalid("", "the body is not UTF-8")
	}
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return job.CreateRequest{}, invalid("", "the body must be a JSON object")
	}
	if err := exactKeys(trimmed, "", bodyFields); err != nil {
		return job.CreateRequest{}, err
	}
	if k, ok := duplicateKey(trimmed); ok {
		return job.CreateRequest{}, invalid(Clip(k, 64), "the field %q appears twice in one object", Clip(k, 64))
	}
	var b map[string]json.RawMessage // members by name; absent is nil
	if err := strictDecode(trimmed, &b); err != nil {
		return job.CreateRequest{}, err
	}
	hash, err := job.InputHash(trimmed)
	if err != nil {
		return job.CreateRequest{}, invalid("", "the body is not valid JSON")
	}
	r := job.CreateRequest{Tenant: tenant, RequestKey: key, InputHash: hash}

	r.Model = l.DefaultModel
	if raw := b["model"]; given(raw) {
		if json.Unmarshal(raw, &r.Model) != nil {
			return r, invalid("model", "model has the wrong type (want a string)")
		}
		if !slices.Contains(l.Models, r.Model) {
			return r, invalid("model", "unknown model %q; known: %s", Clip(r.Model, 64), strings.Join(l.Models, ", "))
		}
	}
	if given(b["input_upload"]) {
		// The handler swaps an upload for its input before this parse: one
		// still here came with an input too.
		return r, invalid("input_upload", "give exactly one of input and input_upload")
	}
	if !given(b["input"]) {
		return r, invalid("input", "input (or input_upload) is required")
	}
	if err := parseInput(b["input"], l, &r); err != nil {
		return r, err
	}
	secs, err := boundedInt("deadline_seconds", b["deadline_seconds"], int(l.DefaultDeadline/time.Second), 1, int(l.MaxDeadline/time.Second))
	if err != nil {
		return r, err
	}
	r.Deadline = time.Duration(secs) * time.Second
	if r.MaxAttempts, err = boundedInt("max_attempts", b["max_attempts"], l.DefaultMaxAttempts, 1, l.MaxMaxAttempts); err != nil {
		return r, err
	}
	if err := parseBudget(b["budget_cents"], l, &r); err != nil {
		return r, err
	}
	if err := parseMetadata(b["metadata"], l, &r); err != nil {
		return r, err
	}
	if err := parseCallback(b, &r); err != nil {
		return r, err
	}
	return r, parseLanes(b["lanes"], &r)
}

// parseLanes reads lanes, a list of the lanes the job may be served in
// (nil when absent: any).
func parseLanes(raw json.RawMessage, r *job.CreateRequest) error {
	if !given(raw) {
		return nil
	}
	if json.Unmarshal(raw, &r.Lanes) != nil || len(r.Lanes) == 0 {
		return invalid("lanes", "lanes must be a non-empty list of lane names (batch, flex, standard, priority)")
	}
	return job.CheckLanes(r.Lanes)
}

// parseBudget reads budget_cents, an exact decimal number of cents (the
// default budget when absent), above 0 and at most the limit.
func parseBudget(raw json.RawMessage, l job.Limits, r *job.CreateRequest) error {
	r.Budget = l.DefaultBudget
	budget, ok, err := number("budget_cents", raw)
	if err != nil || !ok {
		return err
	}
	v, err := job.ParseCents(budget)
	if err != nil || v <= 0 || v > l.MaxBudget {
		return invalid("budget_cents", "budget_cents must be a decimal number of cents above 0 and at most %s", l.MaxBudget)
	}
	r.Budget = v
	return nil
}

// parseMetadata keeps metadata, a JSON object of at most the limit's
// size, as it was sent.
func parseMetadata(raw json.RawMessage, l job.Limits, r *job.CreateRequest) error {
	if !given(raw) {
		return nil
	}
	m := bytes.TrimSpace(raw)
	if len(m) == 0 || m[0] != '{' {
		return invalid("metadata", "metadata must be a JSON object")
	}
	if len(m) > l.MaxMetadataBytes {
		return invalid("metadata", "metadata is larger than %d bytes", l.MaxMetadataBytes)
	}
	r.Metadata = json.RawMessage(m)
	return nil
}

// parseCallback reads callback_url and callback_events. Whether the target
// may be called at all is the handler's check (it resolves the host).
func parseCallback(b map[string]json.RawMessage, r *job.CreateRequest) error {
	if raw := b["callback_url"]; given(raw) {
		if json.Unmarshal(raw, &r.Callback.URL) != nil {
			return invalid("callback_url", "callback_url has the wrong type (want a string)")
		}
		var bad *webhook.ErrTarget
		u, err := webhook.ParseTarget(r.Callback.URL)
		if errors.As(err, &bad) {
			return invalid("callback_url", "callback_url refused: %s", bad.Reason)
		}
		if err == nil && !callablePort(u) {
			return invalid("callback_url", "callback_url refused: the port must be a number from 1 to 65535 (or left out, with no colon)")
		}
	}
	raw := b["callback_events"]
	if !given(raw) {
		return nil
	}
	if r.Callback.URL == "" {
		return invalid("callback_events", "callback_events needs a callback_url")
	}
	var names []string
	if json.Unmarshal(raw, &names) != nil || len(names) == 0 {
		return invalid("callback_events", "callback_events must be a non-empty array of states")
	}
	events := make([]job.State, len(names))
	for i, n := range names {
		events[i] = job.State(n)
		if !slices.Contains(job.CallbackEvents, events[i]) {
			return invalid("callback_events", "callback_events may hold running, succeeded, failed and abandoned, not %q", Clip(n, 32))
		}
	}
	r.Callback.Events = job.CanonicalEvents(events)
	return nil
}

// callablePort reports whether a connection can be made to u's port:
// none given, or 1 to 65535. url.Parse takes any digits and a colon with
// none ("https://host:/x"); such a target can never be delivered to, so
// the job would retry its callback until it dead-letters, hours later.
func callablePort(u *url.URL) bool {
	if !strings.HasSuffix(u.Host, ":") && u.Port() == "" {
		return true
	}
	n, err := strconv.Atoi(u.Port())
	return err == nil && n >= 1 && n <= 65535
}

// parseInput decodes the input member strictly, then holds it to the
// domain's rules for a model input (job.Limits.CheckInput).
func parseInput(raw json.RawMessage, l job.Limits, r *job.CreateRequest) error {
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
	if err := l.CheckInput(&r.Input); err != nil {
		if e, ok := refusal(err); ok {
			return e
		}
		return err
	}
	js, err := job.EncodeJSON(r.Input)
	if err != nil {
		return fmt.Errorf("encode input: %w", err)
	}
	r.InputJSON = js
	return nil
}

// inputKeys applies exactKeys to the input object, its reasoning and
// each message.
func inputKeys(b []byte) error {
	if err := exactKeys(b, "input.", inputFields); err != nil {
		return err
	}
	var in struct {
		Messages       json.RawMessage `json:"messages"`
		Reasoning      json.RawMessage `json:"reasoning"`
		ResponseFormat json.RawMessage `json:"response_format"`
	}
	if json.Unmarshal(b, &in) != nil {
		return nil
	}
	if err := formatKeys(in.ResponseFormat); err != nil {
		return err
	}
	if given(in.Reasoning) {
		if err := exactKeys(in.Reasoning, "input.reasoning.", reasoningFields); err != nil {
			return err
		}
	}
	var msgs []json.RawMessage
	if json.Unmarshal(in.Messages, &msgs) != nil {
		return nil
	}
	for i, m := range msgs {
		if err := exactKeys(m, fmt.Sprintf("input.messages[%d].", i), messageFields); err != nil {
			return err
		}
	}
	return nil
}

// given reports whether a member is present and not null: either way the
// caller did not choose a value.
func given(raw json.RawMessage) bool { return raw != nil && string(raw) != "null" }

func invalid(field, format string, args ...any) *Error {
	return refuse(wire.CodeInvalidRequest, field, format, args...)
}

func bodyTooLarge() *Error {
	return refuse(wire.CodePayloadTooLarge, "", "the body is larger than %d bytes", MaxBodyBytes)
}
