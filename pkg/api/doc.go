// Package api is the HTTP face of aijobs: one handler that turns API Gateway
// HTTP API (payload 2.0) events into job records and job views. It exists as
// a plain package, apart from its Lambda wiring, so that every answer the
// API can give (status, headers, problem code) is proven by unit tests with
// an in-memory store and a fake queue, and so that the local dev server runs
// exactly the code that runs in AWS.
//
// The handler owns only the HTTP contract's behaviour (docs/api.md,
// "The API"): routing, tenancy, body and header checks, the strict decoding of a
// create body (ParseCreate), and the statuses of the problem codes (one table,
// problem.go, which also says which domain code each answers). The shapes it
// answers with and reads (the view, summary, page, problem and its codes, the
// create body, the list query) are package wire's, declared there once so that
// pkg/client uses them without linking this package. The rules a job must obey
// (the input's, the limits, the input hash) live in package job; persistence and
// delivery sit behind the small Store and Queue interfaces declared here.
//
// Every error is an RFC 9457 problem (application/problem+json) with a
// stable "code" member, documented at docs/errors.md#<code>:
//
//	invalid_request         400  a bad header, body, field or id ("field" names it)
//	unauthorized            401  no tenant in the authorizer context, or one over 1024 bytes
//	not_found               404  unknown route, unknown job, or another tenant's job
//	method_not_allowed      405  known path, other method (see the Allow header)
//	already_finished        409  cancel of a succeeded or failed job
//	payload_too_large       413  a body over 5 MiB, an upload over 32 MiB, or a record over the store's 400 KB
//	unsupported_media_type  415  a Content-Type other than application/json
//	idempotency_key_reused  422  same Idempotency-Key, different request body
//	option_unsupported      422  an input option, or an image or document part, a model of the route refuses ("field" names it)
//	upload_not_found        422  input_upload names no upload of this caller
//	enqueue_failed          503  recorded but not enqueued: retry with the same key
//	unavailable             503  the store or queue is unavailable: retry later
//	internal                500  anything else; details are logged, never returned
//
// Both 503s carry Retry-After. No response ever holds a Go or vendor error
// string; those go to the log, which never holds the Authorization header,
// the job input or the result.
package api
