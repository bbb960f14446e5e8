package job

// Payload is an object of the payload store (docs/payloads.md) that a
// record points at instead of holding it: a large input or a large
// answer. The record keeps what proves the object is the one written:
// its size and SHA-256, checked by whoever reads it back.
type Payload struct {
	// Key is the object's key in the payload bucket.
	Key string
	// Size is the object's length in bytes.
	Size int64
	// SHA256 is the object's digest, "sha256:<hex>" as InputHash is.
	SHA256 string
}
