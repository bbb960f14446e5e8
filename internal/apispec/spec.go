// Package apispec holds docs/openapi.yaml, the API's published contract,
// to the code: it loads the document, checks HTTP exchanges against it
// (the API's unit tests, the client's tests and the end-to-end suite send
// every exchange through Check) and renders it as docs/api.html. It lives
// apart from pkg/api so the handler never depends on its own test oracle.
package apispec

import (
	"context"
	"fmt"
	"path/filepath"
	"runtime"
	"sync"

	"github.com/getkin/kin-openapi/openapi3"
)

// Path is docs/openapi.yaml in the source tree this package was built
// from: the tests and the generator run there.
func Path() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "docs", "openapi.yaml")
}

// Load reads and validates an OpenAPI document.
func Load(path string) (*openapi3.T, error) {
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromFile(path)
	if err != nil {
		return nil, fmt.Errorf("load %s: %w", path, err)
	}
	if err := doc.Validate(context.Background()); err != nil {
		return nil, fmt.Errorf("%s is not a valid OpenAPI document: %w", path, err)
	}
	return doc, nil
}

var (
	defaultOnce sync.Once
	defaultV    *Validator
	defaultErr  error
)

// Default is the validator of docs/openapi.yaml, loaded once per process.
func Default() (*Validator, error) {
	defaultOnce.Do(func() {
		doc, err := Load(Path())
		if err != nil {
			defaultErr = err
			return
		}
		defaultV, defaultErr = New(doc)
	})
	return defaultV, defaultErr
}
