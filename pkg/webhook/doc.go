// Package webhook is how aijobs tells a caller that a job changed, as
// Standard Webhooks 1.0 says a sender should (docs/webhooks.md): a signed
// POST whose id, timestamp and body are covered by an HMAC-SHA256 with a
// secret the caller holds, to a target that can never be the sender's own
// network. Polling stays the source of truth; a delivery is a hint that a
// newer version of the job exists, so every body carries that version.
//
// The package depends on the standard library only: the notifier signs and
// delivers with it, and pkg/client verifies with the same code, so the two
// sides cannot drift.
package webhook
