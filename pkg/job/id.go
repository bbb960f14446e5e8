package job

import (
	"crypto/sha256"
	"encoding/base32"
	"strings"
)

var idEncoding = base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)

// IDLength is the length of every job id ("job_" and 26 base32 characters).
const IDLength = 4 + 26

// NewID derives the job id from the tenant and the caller's idempotency key.
// Because the id is a function of both, the store's conditional put on the id
// is the uniqueness check on the key, and two tenants can never collide.
func NewID(tenant, requestKey string) string {
	h := sha256.New()
	h.Write([]byte(tenant))
	h.Write([]byte{0})
	h.Write([]byte(requestKey))
	return "job_" + idEncoding.EncodeToString(h.Sum(nil))[:26]
}

// ValidID reports whether s has the shape of a job id, so garbage is refused
// before it reaches the store.
func ValidID(s string) bool {
	if len(s) != IDLength || !strings.HasPrefix(s, "job_") {
		return false
	}
	for _, r := range s[4:] {
		if !(r >= 'a' && r <= 'z' || r >= '2' && r <= '7') {
			return false
		}
	}
	return true
}
