package job

import (
	"strconv"
	"time"
)

// WebhookKeys is which versions of a tenant's webhook signing key are in
// use (docs/webhooks.md, "Your signing key"). Each tenant's deliveries are
// signed with a key of its own, derived from the deployment secret and the
// version, so nothing secret is stored: the record holds only numbers.
// A rotation makes a new current version and keeps the one before it
// signing for KeyOverlap, so receivers can move to the new key with no
// delivery left unverifiable.
type WebhookKeys struct {
	Tenant string
	// Current is the version every delivery is signed with; a tenant that
	// never rotated is at version 1.
	Current int
	// Previous is the version before the last rotation (0: none), still
	// signed with until RotatedAt + KeyOverlap.
	Previous  int
	RotatedAt time.Time
}

// KeyOverlap is how long a rotated-away key still signs deliveries: a day,
// time enough to deploy a receiver with the new key.
const KeyOverlap = 24 * time.Hour

// FirstWebhookKeys is a tenant's keys before any rotation.
func FirstWebhookKeys(tenant string) WebhookKeys { return WebhookKeys{Tenant: tenant, Current: 1} }

// InUse are the versions deliveries are signed with at now: the current
// one, then the previous one while its overlap lasts.
func (k WebhookKeys) InUse(now time.Time) []int {
	v := []int{max(k.Current, 1)}
	if k.Previous > 0 && now.Before(k.RotatedAt.Add(KeyOverlap)) {
		v = append(v, k.Previous)
	}
	return v
}

// RotateFrom decides a rotation away from version from, the one the caller
// saw as current: when it is current, rotate (the next keys, true); when
// it is the one the last rotation replaced, the caller's rotation already
// happened (a retry whose answer was lost): k as it is, false; otherwise
// the version moved on without the caller, a conflict. So a retried
// rotation never rotates twice and leaves no receiver's key unsigned.
func (k WebhookKeys) RotateFrom(from int, now time.Time) (WebhookKeys, bool, error) {
	switch cur := max(k.Current, 1); {
	case from == cur:
		return k.Rotate(now), true, nil
	case from == k.Previous && cur == from+1:
		return k, false, nil
	}
	return k, false, &Error{Code: CodeConflict, Field: "version",
		Message: "the key is at version " + strconv.Itoa(max(k.Current, 1)) + ", not the version named"}
}

// Rotate returns k after a rotation at now: a new current version, the old
// one kept signing for KeyOverlap.
func (k WebhookKeys) Rotate(now time.Time) WebhookKeys {
	cur := max(k.Current, 1)
	return WebhookKeys{Tenant: k.Tenant, Current: cur + 1, Previous: cur, RotatedAt: Millis(now)}
}
