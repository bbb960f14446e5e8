package main

import (
	"bytes"
	"context"
	"encoding/json"
	"image"
	"image/png"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aijobs/aijobs/internal/awstest"
	"github.com/aijobs/aijobs/pkg/app"
	"github.com/aijobs/aijobs/pkg/client"
	"github.com/aijobs/aijobs/pkg/client/clienttest"
	"github.com/aijobs/aijobs/pkg/config"
	"github.com/aijobs/aijobs/pkg/job"
	"github.com/aijobs/aijobs/pkg/wire"
)

// writeFile writes b to name in a fresh directory and answers its path.
func writeFile(t *testing.T, name string, b []byte) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func pngBytes(t *testing.T) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := png.Encode(&b, image.NewGray(image.Rect(0, 0, 2, 2))); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// Each --file is a part of the user message, typed by its bytes, before
// the prompt's text; what the API does not take is refused before
// anything is sent.
func TestSubmitFilesAreContentParts(t *testing.T) {
	srv := clienttest.Start(t)
	env := map[string]string{"AIJOBS_ENDPOINT": srv.URL, "AIJOBS_TOKEN": "tenant-a"}
	pic := writeFile(t, "chart.bin", pngBytes(t)) // the name says nothing: the bytes do
	notes := writeFile(t, "notes.txt", []byte("Q3: two outages."))

	v := view(t, invocation{env: env, args: args("submit", "--key", "parts", "--file", pic, "--file", notes, "--max-tokens", "64", "Describe both")}.run(t))
	j, err := srv.Store.Get(context.Background(), v.ID)
	if err != nil {
		t.Fatal(err)
	}
	var in job.Input
	if err := json.Unmarshal(j.Input, &in); err != nil {
		t.Fatal(err)
	}
	if len(in.Messages) != 1 || len(in.Messages[0].Parts) != 3 || in.MaxTokens != 64 {
		t.Fatalf("input = %s", j.Input)
	}
	p := in.Messages[0].Parts
	if p[0].Type != job.PartImage || p[0].MediaType != "image/png" || !bytes.Equal(p[0].Bytes(), pngBytes(t)) ||
		p[1].Type != job.PartDocument || p[1].MediaType != "text/plain" || p[1].Name != "notes.txt" || string(p[1].Bytes()) != "Q3: two outages." ||
		p[2].Type != job.PartText || p[2].Text != "Describe both" {
		t.Errorf("parts = %+v", p)
	}

	before := len(srv.Requests())
	for name, c := range map[string]struct {
		b    []byte
		want string
	}{
		"body.json":  {[]byte(`{"input":{}}`), "a create body goes in --body"},
		"tool.bin":   {[]byte{0x7f, 'E', 'L', 'F', 0}, "is not a PNG, JPEG, WebP or GIF image, a PDF, or a .txt document"},
		"binary.txt": {[]byte("a\x00b"), "is not a PNG"},
		"huge.png":   {append(pngBytes(t), make([]byte, job.MaxImageBytes)...), "larger than the 3750000 bytes one image may be"},
	} {
		r := invocation{env: env, args: args("submit", "--key", "refused", "--file", writeFile(t, name, c.b), "x")}.run(t)
		if r.code != 2 || !strings.Contains(r.stderr, c.want) {
			t.Errorf("--file %s: exit %d, stderr %q; want 2 and %q", name, r.code, r.stderr, c.want)
		}
	}
	if n := len(srv.Requests()) - before; n != 0 {
		t.Errorf("refused files sent %d requests", n)
	}
}

// startLocal is make dev's stack (the API, the worker with the fake
// provider, the payload bucket) on the emulator; it answers the API's
// URL and the environment a CLI invocation against it reads.
func startLocal(t *testing.T) map[string]string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	vars := map[string]string{"AWS_ENDPOINT_URL": awstest.Endpoint(t), "AWS_REGION": "us-east-1", "AIJOBS_PREFIX": awstest.Prefix(t),
		"AIJOBS_FAKE_LATENCY": "100ms", "AIJOBS_METRICS": "off",
		// API Gateway's 29 s ceiling, not make dev's 10 s: under -race the
		// API takes about 14 times longer over a large input
		// (e2e/race_test.go), and a 4 MB document's create overran 10 s
		// on a loaded machine; the e2e payload tests set the same.
		"AIJOBS_API_TIMEOUT": "29s"}
	cfg, err := config.Load(func(k string) string { return vars[k] })
	if err != nil {
		t.Fatal(err)
	}
	a, err := app.New(ctx, cfg, app.Options{CreateResources: true})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan struct{})
	go func() { defer close(served); _ = a.DevServer().Serve(ctx, ln) }()
	t.Cleanup(func() { cancel(); <-served })
	return map[string]string{"AIJOBS_ENDPOINT": "http://" + ln.Addr().String(), "AIJOBS_TOKEN": "tenant-a"}
}

// runReal runs the CLI with the real clock and waits, as a person's
// shell would.
func runReal(t *testing.T, vars map[string]string, argv ...string) result {
	t.Helper()
	var stdout, stderr bytes.Buffer
	e := &env{stdin: strings.NewReader(""), stdout: &stdout, stderr: &stderr, getenv: func(k string) string { return vars[k] },
		loadAWS: loadAWS, openURL: func(string) error { return nil }}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	err := run(ctx, argv, e)
	code := report(&stderr, err)
	return result{stdout: stdout.String(), stderr: stderr.String(), code: code, err: err}
}

// aijobs submit --file contract.pdf --schema schema.json "Summarise"
// against make dev's stack: a PDF whose create body passes the API's
// 5 MiB goes through an upload by itself, the fake provider reads it,
// and the answer is JSON the schema accepts (issue 39 item 6).
func TestSubmitADocumentWithASchemaOnTheLocalStack(t *testing.T) {
	vars := startLocal(t)
	pdf := append([]byte("%PDF-1.4\n"), bytes.Repeat([]byte("0 0 obj\n"), 4_000_000/8)...)
	contract := writeFile(t, "contract.pdf", pdf)
	schema := writeFile(t, "summary.schema.json", []byte(`{"type":"object","properties":{"title":{"type":"string"},"pages":{"type":"integer"}},
		"required":["title","pages"],"additionalProperties":false}`))

	r := runReal(t, vars, "submit", "--key", "contract-1", "--file", contract, "--schema", schema, "--budget-cents", "200",
		"--wait", "--timeout", "2m", "--output", "json", "Summarise")
	if r.code != 0 {
		t.Fatalf("exit %d: %s\n%s", r.code, r.stderr, r.stdout)
	}
	var v client.View
	if err := json.Unmarshal([]byte(r.stdout), &v); err != nil {
		t.Fatalf("%v: %s", err, r.stdout)
	}
	var res wire.Result
	if err := json.Unmarshal(v.Result, &res); err != nil {
		t.Fatalf("result %s: %v", v.Result, err)
	}
	var answer struct {
		Title *string `json:"title"`
		Pages *int    `json:"pages"`
	}
	dec := json.NewDecoder(strings.NewReader(res.Output))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&answer); err != nil || answer.Title == nil || answer.Pages == nil {
		t.Errorf("the answer %q is not the schema's JSON: %v", res.Output, err)
	}
	// The fake bills a document 1,000 tokens and text a token per 4
	// bytes: the call carried the document and the prompt.
	if want := int64(1000 + (len("Summarise")+3)/4); res.Usage.InputTokens != want {
		t.Errorf("the model was sent %d input tokens, want %d: the document and the prompt", res.Usage.InputTokens, want)
	}
}
