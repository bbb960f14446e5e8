// Package console is the operator console (`aijobs console`, docs/cli.md):
// web pages a person keeps open during an incident, served from the
// operator's machine with the operator's AWS credentials, reading the jobs
// table and queues directly as `aijobs failures` and `aijobs replay` do.
// Nothing is exposed in AWS; the server binds to loopback, answers only
// requests addressed to a loopback host that carry the process's access
// token (access.go) and do not come from another site, refuses a
// state-changing request without the process's CSRF token, and logs every
// action with the AWS identity that made it.
//
// The pages are rendered on the server (html/template, charts as inline
// SVG) from templates and assets embedded in the binary, so the console
// works offline and needs no build step. The package declares what it
// reads (Store, Depth, Replayer); the in-memory store satisfies Store in
// tests, the DynamoDB store in production.
package console
