// Command aijobs-apidoc renders docs/openapi.yaml as docs/api.html, the
// offline API reference (make docs; a test fails while it is stale).
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/aijobs/aijobs/internal/apispec"
)

func main() {
	in := flag.String("in", apispec.Path(), "the OpenAPI document")
	out := flag.String("out", filepath.Join(filepath.Dir(apispec.Path()), "api.html"), "the page to write")
	flag.Parse()
	if err := run(*in, *out); err != nil {
		fmt.Fprintln(os.Stderr, "aijobs-apidoc:", err)
		os.Exit(1)
	}
}

func run(in, out string) error {
	doc, err := apispec.Load(in)
	if err != nil {
		return err
	}
	page, err := apispec.HTML(doc)
	if err != nil {
		return err
	}
	return os.WriteFile(out, page, 0o644)
}
