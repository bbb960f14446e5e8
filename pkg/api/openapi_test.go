package api

import (
	"go/ast"
	"go/parser"
	"go/token"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/aijobs/aijobs/internal/apispec"
	"github.com/aijobs/aijobs/pkg/job"
	"github.com/aijobs/aijobs/pkg/wire"
)

// The drift tests: docs/openapi.yaml and the code name the same routes,
// wire fields, query parameters, problem codes (with their statuses) and
// enums, each in both directions. Every exchange of this package's tests
// is also held to the document (checkContract); these catch what no test
// exchanges, such as a field only some state fills or a code no test
// provokes.

func loadSpec(t *testing.T) *openapi3.T {
	t.Helper()
	doc, err := apispec.Load(apispec.Path())
	if err != nil {
		t.Fatal(err)
	}
	return doc
}

func schema(t *testing.T, doc *openapi3.T, name string) *openapi3.Schema {
	t.Helper()
	ref := doc.Components.Schemas[name]
	if ref == nil || ref.Value == nil {
		t.Fatalf("docs/openapi.yaml has no components.schemas.%s", name)
	}
	return ref.Value
}

// diff reports what one set holds and the other does not.
func diff(t *testing.T, what string, code, doc []string) {
	t.Helper()
	for _, c := range code {
		if !slices.Contains(doc, c) {
			t.Errorf("%s %q is in the code, not in docs/openapi.yaml", what, c)
		}
	}
	for _, d := range doc {
		if !slices.Contains(code, d) {
			t.Errorf("%s %q is in docs/openapi.yaml, not in the code", what, d)
		}
	}
}

// TestOpenAPIFieldsAreTheWireTypes: each wire struct's JSON members are
// its schema's properties, and a member is required exactly when it is
// always written (no omitempty). The API answers with pkg/wire's types and
// pkg/client sends and decodes these same types (aliases), so this holds
// the Go client's types to the document too; the schema named CreateRequest
// is wire.CreateBody.
func TestOpenAPIFieldsAreTheWireTypes(t *testing.T) {
	doc := loadSpec(t)
	for name, typ := range map[string]reflect.Type{
		"View":          reflect.TypeFor[wire.View](),
		"Summary":       reflect.TypeFor[wire.Summary](),
		"Page":          reflect.TypeFor[wire.Page](),
		"Problem":       reflect.TypeFor[wire.Problem](),
		"CreateRequest": reflect.TypeFor[wire.CreateBody](),
		"Input":         reflect.TypeFor[job.Input](),
		"Message":       reflect.TypeFor[job.Message](),
		"Reasoning":     reflect.TypeFor[job.Reasoning](),
		"Result":        reflect.TypeFor[wire.Result](),
		"Usage":         reflect.TypeFor[wire.Usage](),
		"CallbackView":  reflect.TypeFor[wire.CallbackView](),
		"WebhookEvent":  reflect.TypeFor[wire.WebhookEvent](),
	} {
		t.Run(name, func(t *testing.T) {
			s := schema(t, doc, name)
			var members, always []string
			for _, f := range reflect.VisibleFields(typ) {
				tag, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
				if f.Anonymous && tag == "" {
					continue // its fields are promoted: VisibleFields lists them
				}
				if tag == "-" || !f.IsExported() {
					continue
				}
				members = append(members, tag)
				if !strings.Contains(","+opts+",", ",omitempty,") {
					always = append(always, tag)
				}
			}
			diff(t, name+" member", members, slices.Collect(maps.Keys(s.Properties)))
			if name == "Problem" {
				// problemFor always fills detail (the title when it is given
				// none); the tag's omitempty serves only decoding.
				always = append(always, "detail")
			}
			diff(t, name+" required member", always, s.Required)
			if s.AdditionalProperties.Has == nil || *s.AdditionalProperties.Has {
				t.Errorf("%s allows members the document does not name: want additionalProperties: false", name)
			}
		})
	}
}

// TestOpenAPIQueryParametersAreTheAPIs: GET /jobs declares exactly the
// parameters parseList reads, and ListQuery writes only those.
func TestOpenAPIQueryParametersAreTheAPIs(t *testing.T) {
	doc := loadSpec(t)
	op := doc.Paths.Value("/jobs").Get
	var declared []string
	for _, p := range op.Parameters {
		if p.Value.In == openapi3.ParameterInQuery {
			declared = append(declared, p.Value.Name)
		}
	}
	diff(t, "GET /jobs query parameter", slices.Collect(maps.Keys(listParams)), declared)
	full := wire.ListQuery{State: job.Running, ErrorClass: job.Timeout, Since: time.Now(), Limit: 5, Cursor: "c"}
	for name := range full.Values() {
		if !slices.Contains(declared, name) {
			t.Errorf("wire.ListQuery sends %q, which docs/openapi.yaml does not declare", name)
		}
	}
}

// TestOpenAPIProblemCodesAreTheTable: the document's problem codes are
// the codes table's, each under the status the table answers it with:
// the Problem schema's code enum lists them, and each Problem* schema
// (what a response's problem+json holds) pins a status and its codes.
func TestOpenAPIProblemCodesAreTheTable(t *testing.T) {
	doc := loadSpec(t)
	var tableCodes []string
	for c := range codes {
		tableCodes = append(tableCodes, string(c))
	}
	var enum []string
	for _, v := range schema(t, doc, "Problem").Properties["code"].Value.Enum {
		enum = append(enum, v.(string))
	}
	diff(t, "problem code", tableCodes, enum)

	statuses := map[string][]int{} // code -> statuses the document answers it with
	for name, ref := range doc.Components.Schemas {
		if !strings.HasPrefix(name, "Problem") || name == "Problem" {
			continue
		}
		s := ref.Value
		st, code := s.Properties["status"], s.Properties["code"]
		if st == nil || code == nil || st.Value.Const == nil {
			t.Errorf("components.schemas.%s pins no status and code", name)
			continue
		}
		status := int(st.Value.Const.(float64))
		cs := code.Value.Enum
		if code.Value.Const != nil {
			cs = append(cs, code.Value.Const)
		}
		for _, c := range cs {
			statuses[c.(string)] = append(statuses[c.(string)], status)
		}
	}
	diff(t, "problem code answered by a response", tableCodes, slices.Collect(maps.Keys(statuses)))
	for c, sts := range statuses {
		info, ok := codes[wire.Code(c)]
		if !ok {
			continue
		}
		for _, st := range sts {
			if st != info.status {
				t.Errorf("docs/openapi.yaml answers %s with %d, the codes table with %d", c, st, info.status)
			}
		}
	}
}

// TestOpenAPIEnumsAreTheDomains: State and ErrorClass list the job
// package's states and classes.
func TestOpenAPIEnumsAreTheDomains(t *testing.T) {
	doc := loadSpec(t)
	enum := func(name string) []string {
		var out []string
		for _, v := range schema(t, doc, name).Enum {
			out = append(out, v.(string))
		}
		return out
	}
	var classes []string
	for _, c := range job.Classes() {
		classes = append(classes, string(c))
	}
	diff(t, "error class", classes, enum("ErrorClass"))
	diff(t, "state", constsOf(t, "../job/state.go", "State"), enum("State"))
}

// constsOf is the values of the string constants of type typ in a file.
func constsOf(t *testing.T, file, typ string) []string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), file, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	ast.Inspect(f, func(n ast.Node) bool {
		vs, ok := n.(*ast.ValueSpec)
		if !ok || vs.Type == nil || len(vs.Values) != len(vs.Names) {
			return true
		}
		if id, ok := vs.Type.(*ast.Ident); ok && id.Name == typ {
			for _, v := range vs.Values {
				if lit, ok := v.(*ast.BasicLit); ok && lit.Kind == token.STRING {
					s, _ := strconv.Unquote(lit.Value)
					out = append(out, s)
				}
			}
		}
		return true
	})
	if len(out) == 0 {
		t.Fatalf("no %s constants in %s", typ, file)
	}
	return out
}

// TestOpenAPIRoutesAreTheAPIs: the document's paths and methods are the
// ones match serves. match cannot be listed, so it is probed: every path
// of up to three segments built from the words of routes.go's literals (a
// new route needs a new literal), a valid id in the second, and every path
// of the document; a path match serves must be in the document with the
// same methods, and each path of the document must be served.
func TestOpenAPIRoutesAreTheAPIs(t *testing.T) {
	doc := loadSpec(t)
	id := job.NewID("t", "k")
	documented := map[string][]string{}
	for path, item := range doc.Paths.Map() {
		documented[path] = slices.Sorted(maps.Keys(item.Operations()))
	}
	served := map[string][]string{}
	// probe asks match about the path of segs; the segment it takes as the
	// id (route checks its form later) is the template's {id}.
	probe := func(segs ...string) {
		ep, ok := match("/" + strings.Join(segs, "/"))
		if !ok {
			return
		}
		tmpl := slices.Clone(segs)
		if i := slices.Index(tmpl[1:], ep.id); ep.id != "" && i >= 0 {
			tmpl[i+1] = "{id}"
		}
		served["/"+strings.Join(tmpl, "/")] = slices.Sorted(maps.Keys(ep.ops))
	}
	lits := routeLiterals(t)
	for _, first := range lits {
		probe(first)
		for _, a := range append([]string{id}, lits...) {
			probe(first, a)
			for _, b := range lits {
				probe(first, a, b)
			}
		}
	}
	for path := range documented {
		probe(strings.Split(strings.ReplaceAll(path, "{id}", id), "/")[1:]...)
	}
	diff(t, "path", slices.Collect(maps.Keys(served)), slices.Collect(maps.Keys(documented)))
	for path, ms := range served {
		if d, ok := documented[path]; ok && !slices.Equal(d, ms) {
			t.Errorf("%s: the API serves %v, docs/openapi.yaml declares %v", path, ms, d)
		}
	}
	if !slices.Contains(lits, "cancel") {
		t.Fatalf("routes.go literals %v: the probe cannot see the cancel route", lits)
	}
}

// routeLiterals are the path words in routes.go's string literals.
func routeLiterals(t *testing.T) []string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), "routes.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	ast.Inspect(f, func(n ast.Node) bool {
		if lit, ok := n.(*ast.BasicLit); ok && lit.Kind == token.STRING {
			s, _ := strconv.Unquote(lit.Value)
			for _, w := range strings.Split(s, "/") {
				if w != "" && !strings.ContainsAny(w, " %:{}$") {
					seen[w] = true
				}
			}
		}
		return true
	})
	return slices.Sorted(maps.Keys(seen))
}
