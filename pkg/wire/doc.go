// Package wire is the HTTP contract's shapes as Go types (docs/openapi.yaml):
// the view of a job, the summary and page of a listing, the create body, the
// list query, the problem and its codes, the callback's event and a
// succeeded job's result. The API answers with them and pkg/client decodes
// and sends them; they live apart from both so that a client links none of
// the server (no handler, no store, no Lambda events), while the drift
// tests (pkg/api's openapi_test.go) hold them to the document.
//
// It imports nothing of the repository but pkg/job, whose states, classes,
// money and inputs the shapes carry, and no AWS module
// (internal/archtest's rules).
package wire
