package job

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
)

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

// PayloadOf is the pointer to body stored at key.
func PayloadOf(key string, body []byte) Payload {
	sum := sha256.Sum256(body)
	return Payload{Key: key, Size: int64(len(body)), SHA256: "sha256:" + hex.EncodeToString(sum[:])}
}

// Check reports whether body is the object p points at: a body of
// another length or digest is not the one the record was written for
// (overwritten, cut, or another job's), and must never be used as it.
func (p Payload) Check(body []byte) error {
	if int64(len(body)) != p.Size {
		return fmt.Errorf("payload %s is %d bytes, the record says %d", p.Key, len(body), p.Size)
	}
	if got := PayloadOf(p.Key, body).SHA256; got != p.SHA256 {
		return fmt.Errorf("payload %s has digest %s, the record says %s", p.Key, got, p.SHA256)
	}
	return nil
}
