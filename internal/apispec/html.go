package apispec

import (
	"bytes"
	_ "embed"
	"fmt"
	"html/template"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
)

//go:generate go run ../../cmd/aijobs-apidoc

//go:embed html.tmpl
var pageTemplate string

var page = template.Must(template.New("api").Parse(pageTemplate))

// The page's view of the document: everything in it already ordered and
// formatted, so the template only lays it out.
type (
	htmlDoc struct {
		Title, Version string
		Intro          template.HTML
		Servers        []htmlRow
		Security       []htmlRow
		Operations     []htmlOp
		Problems       []htmlProblem
		Schemas        []htmlSchema
	}
	htmlRow struct {
		Name string
		Text template.HTML
	}
	htmlOp struct {
		ID, Method, Path, Summary string
		Text                      template.HTML
		Params                    []htmlParam
		Body                      []htmlRow // media type -> schema
		Responses                 []htmlResponse
	}
	htmlParam struct {
		Name, In string
		Required bool
		Schema   template.HTML
		Text     template.HTML
	}
	htmlResponse struct {
		Status  string
		Text    template.HTML
		Headers []htmlParam
		Content []htmlRow
	}
	htmlProblem struct {
		Status int
		Code   string
	}
	htmlSchema struct {
		Name   string
		Type   template.HTML
		Text   template.HTML
		Fields []htmlParam
		Closed bool
	}
)

// HTML renders doc as one static page: no scripts, no styles from
// elsewhere, readable offline.
func HTML(doc *openapi3.T) ([]byte, error) {
	d := htmlDoc{Title: doc.Info.Title, Version: doc.Info.Version, Intro: markdown(doc.Info.Description)}
	for _, s := range doc.Servers {
		d.Servers = append(d.Servers, htmlRow{s.URL, markdown(s.Description)})
	}
	for _, name := range slices.Sorted(maps.Keys(doc.Components.SecuritySchemes)) {
		s := doc.Components.SecuritySchemes[name].Value
		kind := s.Type
		if s.Scheme != "" {
			kind += " " + s.Scheme
		}
		if s.Name != "" {
			kind += " (" + s.In + " " + s.Name + ")"
		}
		d.Security = append(d.Security, htmlRow{name, template.HTML("<code>"+template.HTMLEscapeString(kind)+"</code> ") + markdown(s.Description)})
	}
	for _, path := range doc.Paths.InMatchingOrder() {
		item := doc.Paths.Value(path)
		ops := item.Operations()
		for _, method := range slices.Sorted(maps.Keys(ops)) {
			d.Operations = append(d.Operations, operation(path, method, item, ops[method]))
		}
	}
	slices.SortFunc(d.Operations, func(a, b htmlOp) int { return strings.Compare(a.Path+" "+a.Method, b.Path+" "+b.Method) })
	for _, name := range slices.Sorted(maps.Keys(doc.Components.Schemas)) {
		s := doc.Components.Schemas[name].Value
		if p := problemOf(s); p != nil {
			d.Problems = append(d.Problems, p...)
		}
		hs := htmlSchema{Name: name, Type: typeOf(doc.Components.Schemas[name], true), Text: markdown(s.Description),
			Closed: s.AdditionalProperties.Has != nil && !*s.AdditionalProperties.Has}
		hs.Fields = fields(s)
		d.Schemas = append(d.Schemas, hs)
	}
	slices.SortFunc(d.Problems, func(a, b htmlProblem) int {
		if a.Status != b.Status {
			return a.Status - b.Status
		}
		return strings.Compare(a.Code, b.Code)
	})
	d.Problems = slices.Compact(d.Problems)
	var b bytes.Buffer
	if err := page.Execute(&b, d); err != nil {
		return nil, fmt.Errorf("render the API reference: %w", err)
	}
	return b.Bytes(), nil
}

func operation(path, method string, item *openapi3.PathItem, op *openapi3.Operation) htmlOp {
	o := htmlOp{ID: op.OperationID, Method: method, Path: path, Summary: op.Summary, Text: markdown(op.Description)}
	for _, p := range append(slices.Clone(item.Parameters), op.Parameters...) {
		v := p.Value
		o.Params = append(o.Params, htmlParam{Name: v.Name, In: v.In, Required: v.Required,
			Schema: typeOf(v.Schema, false), Text: markdown(firstText(v.Description, schemaText(v.Schema)))})
	}
	if op.RequestBody != nil && op.RequestBody.Value != nil {
		o.Body = content(op.RequestBody.Value.Content)
	}
	for _, status := range slices.Sorted(maps.Keys(op.Responses.Map())) {
		ref := op.Responses.Value(status)
		r := ref.Value
		hr := htmlResponse{Status: status, Text: markdown(*r.Description), Content: content(r.Content)}
		if ref.Ref != "" {
			hr.Text = template.HTML(link(ref.Ref)+" ") + hr.Text
		}
		for _, name := range slices.Sorted(maps.Keys(r.Headers)) {
			h := r.Headers[name].Value
			hr.Headers = append(hr.Headers, htmlParam{Name: name, Required: h.Required, Schema: typeOf(h.Schema, false), Text: markdown(h.Description)})
		}
		o.Responses = append(o.Responses, hr)
	}
	return o
}

func content(c openapi3.Content) []htmlRow {
	var rows []htmlRow
	for _, mt := range slices.Sorted(maps.Keys(c)) {
		rows = append(rows, htmlRow{mt, typeOf(c[mt].Schema, false)})
	}
	return rows
}

func fields(s *openapi3.Schema) []htmlParam {
	var out []htmlParam
	for _, name := range slices.Sorted(maps.Keys(s.Properties)) {
		p := s.Properties[name]
		out = append(out, htmlParam{Name: name, Required: slices.Contains(s.Required, name),
			Schema: typeOf(p, false), Text: markdown(schemaText(p))})
	}
	return out
}

// problemOf reads the status and codes a Problem* schema pins.
func problemOf(s *openapi3.Schema) []htmlProblem {
	st, code := s.Properties["status"], s.Properties["code"]
	if len(s.AllOf) == 0 || st == nil || code == nil || st.Value.Const == nil {
		return nil
	}
	status, _ := st.Value.Const.(float64)
	var out []htmlProblem
	for _, c := range append(slices.Clone(code.Value.Enum), code.Value.Const) {
		if c, ok := c.(string); ok {
			out = append(out, htmlProblem{int(status), c})
		}
	}
	return out
}

func schemaText(ref *openapi3.SchemaRef) string {
	if ref == nil || ref.Value == nil || ref.Ref != "" {
		return ""
	}
	return ref.Value.Description
}

func firstText(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// typeOf is a schema in one line: a link to a named schema, else its
// type and constraints. top describes a named schema itself.
func typeOf(ref *openapi3.SchemaRef, top bool) template.HTML {
	if ref == nil {
		return ""
	}
	if ref.Ref != "" && !top {
		return template.HTML(link(ref.Ref))
	}
	s := ref.Value
	if s == nil {
		return ""
	}
	var parts []string
	switch {
	case len(s.AllOf) > 0:
		parts = append(parts, join(s.AllOf, " and "))
	case len(s.AnyOf) > 0:
		parts = append(parts, join(s.AnyOf, " or "))
	case len(s.OneOf) > 0:
		parts = append(parts, join(s.OneOf, " or exactly "))
	case s.Type != nil:
		t := strings.Join(s.Type.Slice(), " or ")
		if s.Type.Is(openapi3.TypeArray) && s.Items != nil {
			t = "array of " + string(typeOf(s.Items, false))
		} else {
			t = template.HTMLEscapeString(t)
		}
		parts = append(parts, t)
	}
	esc := template.HTMLEscapeString
	if s.Const != nil {
		parts = append(parts, "= <code>"+esc(fmt.Sprint(s.Const))+"</code>")
	}
	if len(s.Enum) > 0 {
		var vs []string
		for _, v := range s.Enum {
			vs = append(vs, "<code>"+esc(fmt.Sprint(v))+"</code>")
		}
		parts = append(parts, "one of "+strings.Join(vs, ", "))
	}
	if s.Format != "" {
		parts = append(parts, "format "+esc(s.Format))
	}
	if s.Pattern != "" {
		parts = append(parts, "matching <code>"+esc(s.Pattern)+"</code>")
	}
	if s.Min != nil {
		parts = append(parts, "&ge; "+num(*s.Min))
	}
	if s.ExclusiveMin.Value != nil {
		parts = append(parts, "&gt; "+num(*s.ExclusiveMin.Value))
	}
	if s.Max != nil {
		parts = append(parts, "&le; "+num(*s.Max))
	}
	if s.MinLength > 0 {
		parts = append(parts, "at least "+strconv.FormatUint(s.MinLength, 10)+" characters")
	}
	if s.MinItems > 0 {
		parts = append(parts, "at least "+strconv.FormatUint(s.MinItems, 10)+" items")
	}
	for _, name := range slices.Sorted(maps.Keys(s.Properties)) {
		if !top && len(s.AllOf) > 0 {
			parts = append(parts, "<code>"+esc(name)+"</code> "+string(typeOf(s.Properties[name], false)))
		}
	}
	return template.HTML(strings.Join(parts, ", "))
}

func join(refs openapi3.SchemaRefs, sep string) string {
	var out []string
	for _, r := range refs {
		out = append(out, string(typeOf(r, false)))
	}
	return strings.Join(out, sep)
}

func num(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

// link is a component reference as a link to its section of the page.
func link(ref string) string {
	name := ref[strings.LastIndex(ref, "/")+1:]
	kind := "schema"
	if strings.Contains(ref, "/responses/") {
		kind = "response"
	}
	if kind == "response" {
		return "<em>" + template.HTMLEscapeString(name) + "</em>"
	}
	return `<a href="#` + kind + "-" + template.HTMLEscapeString(name) + `">` + template.HTMLEscapeString(name) + "</a>"
}

var (
	codeSpan = regexp.MustCompile("`([^`]+)`")
	strong   = regexp.MustCompile(`\*\*([^*]+)\*\*`)
)

// markdown renders the little Markdown the document's descriptions use:
// paragraphs, `code` and **strong**.
func markdown(s string) template.HTML {
	var out []string
	for _, para := range strings.Split(strings.TrimSpace(s), "\n\n") {
		if para = strings.TrimSpace(para); para == "" {
			continue
		}
		h := template.HTMLEscapeString(strings.Join(strings.Fields(para), " "))
		h = codeSpan.ReplaceAllString(h, "<code>$1</code>")
		h = strong.ReplaceAllString(h, "<strong>$1</strong>")
		out = append(out, "<p>"+h+"</p>")
	}
	return template.HTML(strings.Join(out, "\n"))
}
