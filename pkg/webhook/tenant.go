package webhook

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"strconv"
)

// tenantLabel separates a tenant key's derivation from every other use of
// the deployment secret (HMAC as a key derivation function: RFC 5869's
// extract step with the deployment secret as the key).
const tenantLabel = "aijobs webhook tenant key v1\x00"

// ForTenant is the signing key of tenant's deliveries at key version
// version, derived from the deployment secret s: HMAC-SHA256(s, label ||
// tenant || 0x00 || version). A tenant's receiver holds only its own key,
// so a delivery made for another tenant's job (whose owner chose this
// receiver as its callback_url) does not verify there; nothing new is
// stored, and rotating the deployment secret rotates every tenant's key.
func (s Secret) ForTenant(tenant string, version int) Secret {
	m := hmac.New(sha256.New, s.key)
	m.Write([]byte(tenantLabel))
	m.Write([]byte(tenant))
	m.Write([]byte{0})
	m.Write([]byte(strconv.Itoa(version)))
	return Secret{key: m.Sum(nil)}
}

// Reveal is the serialized secret ("whsec_" + base64), for the one place
// that hands a key to its holder (the API's webhook key route). Never log
// it; String and GoString redact.
func (s Secret) Reveal() string {
	return secretPrefix + base64.StdEncoding.EncodeToString(s.key)
}

// TenantSecrets are the keys a delivery for tenant is signed with: each
// version in use (the current first) from each deployment secret in use
// (the current first, then the previous during a deployment rotation).
func TenantSecrets(deployment []Secret, tenant string, versions []int) []Secret {
	var out []Secret
	for _, v := range versions {
		for _, s := range deployment {
			out = append(out, s.ForTenant(tenant, v))
		}
	}
	return out
}
