package wire

// WebhookKey answers GET /webhook-key and POST /webhook-key/rotate: the
// caller's own webhook signing key (docs/webhooks.md, "Your signing key"),
// which verifies deliveries of its jobs and of no other tenant's.
type WebhookKey struct {
	// Version and Secret are the key to configure a receiver with: the
	// current version, "whsec_" and base64, as client.VerifyWebhook and
	// any Standard Webhooks library take it.
	Version int    `json:"version"`
	Secret  string `json:"secret"`
	// Signing are all the keys deliveries are signed with now, the one
	// above first: during a rotation, the version rotated away too, until
	// its Until.
	Signing []SigningKey `json:"signing"`
}

// SigningKey is one key deliveries are signed with.
type SigningKey struct {
	Version int    `json:"version"`
	Secret  string `json:"secret"`
	// Until, on a version a rotation replaced, is when it stops signing.
	Until *Time `json:"until,omitempty"`
}

// RotateBody is POST /webhook-key/rotate's body: the version the caller
// rotates away from, so that a retried rotation (its first answer lost)
// rotates once.
type RotateBody struct {
	Version int `json:"version"`
}
