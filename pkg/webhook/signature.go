package webhook

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// The headers of a delivery, named as Standard Webhooks names them.
const (
	HeaderID        = "webhook-id"
	HeaderTimestamp = "webhook-timestamp"
	HeaderSignature = "webhook-signature"
)

// secretPrefix marks a serialized signing secret, so a key pasted in the
// wrong place is recognised as one.
const secretPrefix = "whsec_"

// A Secret is a signing key. Its String never shows the key.
type Secret struct{ key []byte }

// minKeyBytes and maxKeyBytes are Standard Webhooks' bounds on a symmetric
// key: 192 to 512 bits of randomness.
const (
	minKeyBytes = 24
	maxKeyBytes = 64
)

// ErrSecret says a signing secret is not "whsec_" and base64 of 24 to 64
// bytes. It never quotes the value.
var ErrSecret = errors.New("webhook: a signing secret is \"whsec_\" followed by base64 of 24 to 64 random bytes")

// ParseSecret reads a serialized secret ("whsec_" + base64).
func ParseSecret(s string) (Secret, error) {
	b64, ok := strings.CutPrefix(strings.TrimSpace(s), secretPrefix)
	if !ok {
		return Secret{}, ErrSecret
	}
	key, err := base64.StdEncoding.DecodeString(b64)
	if err != nil || len(key) < minKeyBytes || len(key) > maxKeyBytes {
		return Secret{}, ErrSecret
	}
	return Secret{key: key}, nil
}

// NewSecret makes a random 32-byte secret and its serialized form, for a
// deployment's first secret and for rotation.
func NewSecret() (Secret, string) {
	key := make([]byte, 32)
	_, _ = rand.Read(key) // crypto/rand.Read never fails (Go 1.24+)
	return Secret{key: key}, secretPrefix + base64.StdEncoding.EncodeToString(key)
}

// String hides the key: a Secret may end up in a log line or an error.
func (Secret) String() string { return "whsec_[redacted]" }

// GoString hides the key from %#v too.
func (s Secret) GoString() string { return s.String() }

func (s Secret) sign(id string, ts int64, body []byte) string {
	m := hmac.New(sha256.New, s.key)
	fmt.Fprintf(m, "%s.%d.", id, ts)
	m.Write(body)
	return base64.StdEncoding.EncodeToString(m.Sum(nil))
}

// Sign returns the headers of one delivery: its id, the time of this
// attempt, and one "v1," signature per secret (the current one, then the
// previous one during a rotation), space-delimited. An id must not contain
// a full stop: the signed content is id.timestamp.body.
func Sign(secrets []Secret, id string, at time.Time, body []byte) (http.Header, error) {
	if id == "" || strings.ContainsAny(id, ". \t\r\n") {
		return nil, fmt.Errorf("webhook: message id %q must be non-empty with no full stop or space", id)
	}
	if len(secrets) == 0 {
		return nil, errors.New("webhook: no signing secret")
	}
	ts := at.Unix()
	sigs := make([]string, len(secrets))
	for i, s := range secrets {
		if len(s.key) == 0 {
			return nil, ErrSecret
		}
		sigs[i] = "v1," + s.sign(id, ts, body)
	}
	h := http.Header{}
	h.Set(HeaderID, id)
	h.Set(HeaderTimestamp, strconv.FormatInt(ts, 10))
	h.Set(HeaderSignature, strings.Join(sigs, " "))
	return h, nil
}

// DefaultTolerance is how far a delivery's timestamp may be from the
// receiver's clock: Standard Webhooks' replay window.
const DefaultTolerance = 5 * time.Minute

// Why a delivery failed verification. Receivers answer every one of them
// with a 4xx and drop the body.
var (
	ErrMissingHeaders = errors.New("webhook: webhook-id, webhook-timestamp or webhook-signature missing")
	ErrTimestamp      = errors.New("webhook: the timestamp is outside the tolerance (a replayed or delayed delivery)")
	ErrNoMatch        = errors.New("webhook: no signature matches (wrong secret, or the body was changed)")
)

// Verify checks a delivery's signature against any of secrets (two during
// a rotation) and its timestamp against now within tolerance (0 means
// DefaultTolerance). body must be the raw bytes received, not re-encoded
// JSON. Comparisons are constant-time.
func Verify(secrets []Secret, h http.Header, body []byte, now time.Time, tolerance time.Duration) error {
	id, tsText, sigs := h.Get(HeaderID), h.Get(HeaderTimestamp), h.Get(HeaderSignature)
	if id == "" || tsText == "" || sigs == "" {
		return ErrMissingHeaders
	}
	if tolerance <= 0 {
		tolerance = DefaultTolerance
	}
	ts, err := strconv.ParseInt(tsText, 10, 64)
	if err != nil {
		return ErrTimestamp
	}
	if d := now.Sub(time.Unix(ts, 0)); d > tolerance || d < -tolerance {
		return ErrTimestamp
	}
	for _, s := range secrets {
		if len(s.key) == 0 {
			continue
		}
		want := []byte(s.sign(id, ts, body))
		for _, sig := range strings.Fields(sigs) {
			got, ok := strings.CutPrefix(sig, "v1,")
			if ok && hmac.Equal([]byte(got), want) {
				return nil
			}
		}
	}
	return ErrNoMatch
}

// ParseSecrets reads the signing secrets as stored (docs/webhooks.md): the
// current "whsec_..." first, then, during a rotation, the previous one,
// separated by white space.
func ParseSecrets(s string) ([]Secret, error) {
	var out []Secret
	for _, f := range strings.Fields(s) {
		sec, err := ParseSecret(f)
		if err != nil {
			return nil, err
		}
		out = append(out, sec)
	}
	if len(out) == 0 || len(out) > 2 {
		return nil, fmt.Errorf("webhook: want one signing secret, or two during a rotation; got %d", len(out))
	}
	return out, nil
}
