package apispec

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/legacy"
)

// Validator checks exchanges against one document.
type Validator struct {
	doc    *openapi3.T
	router routers.Router
}

// New builds a Validator of doc. Routing ignores the document's servers:
// an exchange is matched on its path alone, wherever it was served.
func New(doc *openapi3.T) (*Validator, error) {
	routed := *doc
	routed.Servers = nil
	r, err := legacy.NewRouter(&routed)
	if err != nil {
		return nil, fmt.Errorf("route the document: %w", err)
	}
	return &Validator{doc: doc, router: r}, nil
}

// Exchange is one request and the answer it got.
type Exchange struct {
	// Request is the request as sent; its Body is not read (see Body).
	Request *http.Request
	Body    []byte
	// Authenticated says whether the request satisfies a security scheme
	// of the document; nil reads the Authorization header's form.
	Authenticated func(scheme string) bool

	Status       int
	Header       http.Header
	ResponseBody []byte
}

// transportHeaders are set by HTTP itself, not by the API.
var transportHeaders = []string{"Content-Type", "Content-Length", "Date", "Connection", "Transfer-Encoding"}

// methods are the methods a path of the document may declare.
var methods = []string{http.MethodGet, http.MethodPut, http.MethodPost, http.MethodDelete,
	http.MethodOptions, http.MethodHead, http.MethodPatch, http.MethodTrace}

// Check holds an exchange to the document:
//   - a request for a path the document does not declare must be answered
//     404 (the NotFound response), one with a method its path does not
//     declare 405 (MethodNotAllowed) with Allow listing the document's
//     methods, unless API Gateway answered first (a GatewayMessage);
//   - a request the document refuses (parameters, headers, body,
//     security, a query parameter it does not declare) must be answered
//     4xx, never accepted and never a 5xx;
//   - every answer must be one the operation declares for its status:
//     headers (each one sent is declared, each required one is sent) and
//     body.
func (v *Validator) Check(x Exchange) error {
	req := x.Request.Clone(context.Background())
	if len(x.Body) > 0 && req.Header.Get("Content-Type") == "" {
		// The document: a body sent without Content-Type is read as JSON.
		req.Header.Set("Content-Type", "application/json")
	}
	req.Body = io.NopCloser(bytes.NewReader(x.Body))
	route, params, ok := v.find(req)
	if !ok {
		return v.checkUnrouted(req, x)
	}
	in := &openapi3filter.RequestValidationInput{
		Request: req, PathParams: params, Route: route,
		Options: &openapi3filter.Options{AuthenticationFunc: authenticate(x.Authenticated), SkipSettingDefaults: true},
	}
	reqErr := openapi3filter.ValidateRequest(context.Background(), in)
	if reqErr == nil {
		reqErr = undeclaredQuery(route.Operation, route.PathItem, req)
	}
	switch {
	case reqErr != nil && (x.Status < 400 || x.Status >= 500):
		return fmt.Errorf("%s %s: the document refuses the request (%v) but the API answered %d", req.Method, req.URL.Path, reqErr, x.Status)
	}
	ref := route.Operation.Responses.Status(x.Status)
	if ref == nil || ref.Value == nil {
		return fmt.Errorf("%s %s answered %d, a status the document does not declare for %s", req.Method, req.URL.Path, x.Status, route.Operation.OperationID)
	}
	where := fmt.Sprintf("%s %s answered %d", req.Method, req.URL.Path, x.Status)
	if err := checkResponse(ref.Value, x); err != nil {
		return fmt.Errorf("%s: %w", where, err)
	}
	out := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: in, Status: x.Status, Header: x.Header,
		Body:    io.NopCloser(bytes.NewReader(x.ResponseBody)),
		Options: &openapi3filter.Options{IncludeResponseStatus: true},
	}
	if err := openapi3filter.ValidateResponse(context.Background(), out); err != nil {
		return fmt.Errorf("%s: %w", where, err)
	}
	return nil
}

// find is the operation of a request. The router forgives a trailing
// slash and an empty path parameter ("/jobs/", "/jobs//cancel"), which
// the document's paths do not name and the API answers 404: those are
// held to the path template segment by segment.
func (v *Validator) find(req *http.Request) (*routers.Route, map[string]string, bool) {
	route, params, err := v.router.FindRoute(req)
	if err != nil {
		return nil, nil, false
	}
	tmpl, path := strings.Split(route.Path, "/"), strings.Split(req.URL.Path, "/")
	if len(tmpl) != len(path) {
		return nil, nil, false
	}
	for i, seg := range tmpl {
		if strings.HasPrefix(seg, "{") && path[i] == "" || !strings.HasPrefix(seg, "{") && seg != path[i] {
			return nil, nil, false
		}
	}
	return route, params, true
}

// checkUnrouted holds the answer to a request the document has no
// operation for: 404, or 405 with the document's methods in Allow.
func (v *Validator) checkUnrouted(req *http.Request, x Exchange) error {
	var allowed []string
	for _, m := range methods {
		probe := req.Clone(context.Background())
		probe.Method = m
		if _, _, ok := v.find(probe); ok {
			allowed = append(allowed, m)
		}
	}
	where := fmt.Sprintf("%s %s (no operation in the document) answered %d", req.Method, req.URL.Path, x.Status)
	name, status := "NotFound", http.StatusNotFound
	if len(allowed) > 0 {
		name, status = "MethodNotAllowed", http.StatusMethodNotAllowed
	}
	if x.Status != status {
		if isGatewayAnswer(x) {
			return v.checkGateway(where, x)
		}
		return fmt.Errorf("%s, want %d (%s)", where, status, name)
	}
	ref := v.doc.Components.Responses[name]
	if ref == nil || ref.Value == nil {
		return fmt.Errorf("the document has no components.responses.%s", name)
	}
	if err := checkResponse(ref.Value, x); err != nil {
		return fmt.Errorf("%s: %w", where, err)
	}
	if status == http.StatusMethodNotAllowed {
		slices.Sort(allowed)
		if got, want := x.Header.Get("Allow"), strings.Join(allowed, ", "); got != want {
			return fmt.Errorf("%s: Allow %q, the document's methods are %q", where, got, want)
		}
	}
	return nil
}

// isGatewayAnswer: API Gateway's own answers are application/json.
func isGatewayAnswer(x Exchange) bool {
	return mediaType(x.Header.Get("Content-Type")) == "application/json" && x.Status >= 400
}

func (v *Validator) checkGateway(where string, x Exchange) error {
	ref := v.doc.Components.Schemas["GatewayMessage"]
	if ref == nil || ref.Value == nil {
		return errors.New("the document has no components.schemas.GatewayMessage")
	}
	var body any
	if err := json.Unmarshal(x.ResponseBody, &body); err != nil {
		return fmt.Errorf("%s: the body is not JSON: %w", where, err)
	}
	if err := ref.Value.VisitJSON(body, openapi3.EnableJSONSchema2020()); err != nil {
		return fmt.Errorf("%s: not a GatewayMessage: %w", where, err)
	}
	return nil
}

// checkResponse checks what openapi3filter does not: that every header
// the answer carries is declared, that each required one is present (a
// 304 included, which openapi3filter skips), their values, and the body
// against the schema of its media type (for the answers no operation
// declares).
func checkResponse(r *openapi3.Response, x Exchange) error {
	for name := range x.Header {
		if slices.ContainsFunc(transportHeaders, func(h string) bool { return strings.EqualFold(h, name) }) {
			continue
		}
		if lookupHeader(r.Headers, name) == nil {
			return fmt.Errorf("header %s is not declared by the document", name)
		}
	}
	for name, ref := range r.Headers {
		h := ref.Value
		if h == nil {
			return fmt.Errorf("header %s is not resolved", name)
		}
		vals, sent := x.Header[http.CanonicalHeaderKey(name)]
		if !sent {
			if h.Required {
				return fmt.Errorf("required header %s is missing", name)
			}
			continue
		}
		if err := checkHeaderValue(h, strings.Join(vals, ", ")); err != nil {
			return fmt.Errorf("header %s: %w", name, err)
		}
	}
	ct := x.Header.Get("Content-Type")
	if len(r.Content) == 0 {
		if len(x.ResponseBody) != 0 {
			return fmt.Errorf("a body where the document declares none: %q", truncate(x.ResponseBody))
		}
		return nil
	}
	mt := r.Content.Get(ct)
	if mt == nil {
		return fmt.Errorf("Content-Type %q is not one the document declares", ct)
	}
	if mt.Schema == nil || mt.Schema.Value == nil {
		return nil
	}
	var body any
	if err := json.Unmarshal(x.ResponseBody, &body); err != nil {
		return fmt.Errorf("the body is not JSON (%v): %q", err, truncate(x.ResponseBody))
	}
	if err := mt.Schema.Value.VisitJSON(body, openapi3.EnableJSONSchema2020()); err != nil {
		return fmt.Errorf("the body does not match the document (%w): %s", err, truncate(x.ResponseBody))
	}
	return nil
}

func lookupHeader(hs openapi3.Headers, name string) *openapi3.HeaderRef {
	for k, ref := range hs {
		if strings.EqualFold(k, name) {
			return ref
		}
	}
	return nil
}

// checkHeaderValue checks a header's value against its schema, read as
// the schema's type.
func checkHeaderValue(h *openapi3.Header, raw string) error {
	if h.Schema == nil || h.Schema.Value == nil {
		return nil
	}
	s := h.Schema.Value
	var v any = raw
	if s.Type.Is(openapi3.TypeInteger) {
		n, err := strconv.ParseInt(raw, 10, 64)
		if err != nil {
			return fmt.Errorf("%q is not an integer", raw)
		}
		v = float64(n)
	}
	return s.VisitJSON(v, openapi3.EnableJSONSchema2020())
}

// undeclaredQuery refuses a query parameter the operation does not
// declare: the API refuses those, so the document must name each one
// it takes.
func undeclaredQuery(op *openapi3.Operation, item *openapi3.PathItem, req *http.Request) error {
	declared := map[string]bool{}
	for _, ps := range []openapi3.Parameters{item.Parameters, op.Parameters} {
		for _, p := range ps {
			if p.Value != nil && p.Value.In == openapi3.ParameterInQuery {
				declared[p.Value.Name] = true
			}
		}
	}
	q, err := url.ParseQuery(req.URL.RawQuery)
	if err != nil {
		return err
	}
	for name := range q {
		if !declared[name] {
			return fmt.Errorf("query parameter %q is not declared", name)
		}
	}
	return nil
}

// authenticate is the security check: the exchange's own, or else the
// Authorization header's form for each scheme.
func authenticate(f func(string) bool) openapi3filter.AuthenticationFunc {
	return func(_ context.Context, in *openapi3filter.AuthenticationInput) error {
		ok := false
		if f != nil {
			ok = f(in.SecuritySchemeName)
		} else {
			auth := in.RequestValidationInput.Request.Header.Get("Authorization")
			switch in.SecuritySchemeName {
			case "sigv4":
				ok = strings.HasPrefix(auth, "AWS4-HMAC-SHA256 ")
			case "jwt":
				ok = strings.HasPrefix(auth, "Bearer ") && len(auth) > len("Bearer ")
			}
		}
		if !ok {
			return in.NewError(nil)
		}
		return nil
	}
}

func mediaType(ct string) string {
	mt, _, _ := strings.Cut(ct, ";")
	return strings.ToLower(strings.TrimSpace(mt))
}

func truncate(b []byte) string {
	if len(b) > 300 {
		return string(b[:300]) + "..."
	}
	return string(b)
}
