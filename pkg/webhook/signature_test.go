package webhook_test

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aijobs/aijobs/pkg/webhook"
)

// The test vector of Standard Webhooks' reference libraries
// (github.com/standard-webhooks/standard-webhooks, libraries/go,
// TestWebhookSign): a receiver using any of them verifies what aijobs signs.
const (
	vectorSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	vectorID     = "msg_p5jXN8AQM9LWM0D4loKWxJek"
	vectorTS     = 1614265330
	vectorBody   = `{"test": 2432232314}`
	vectorSig    = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
)

func mustSecret(t *testing.T, s string) webhook.Secret {
	t.Helper()
	sec, err := webhook.ParseSecret(s)
	if err != nil {
		t.Fatal(err)
	}
	return sec
}

func TestSignMatchesTheStandardWebhooksVector(t *testing.T) {
	h, err := webhook.Sign([]webhook.Secret{mustSecret(t, vectorSecret)}, vectorID, time.Unix(vectorTS, 0), []byte(vectorBody))
	if err != nil {
		t.Fatal(err)
	}
	if got := h.Get(webhook.HeaderSignature); got != vectorSig {
		t.Fatalf("signature %q, want %q", got, vectorSig)
	}
	if h.Get(webhook.HeaderID) != vectorID || h.Get(webhook.HeaderTimestamp) != strconv.Itoa(vectorTS) {
		t.Fatalf("headers %v", h)
	}
}

func TestVerify(t *testing.T) {
	cur, old := mustSecret(t, vectorSecret), mustSecret(t, "whsec_"+strings.Repeat("A", 40))
	stranger, _ := webhook.NewSecret()
	at := time.Unix(vectorTS, 0)
	body := []byte(vectorBody)
	signed := func(secrets ...webhook.Secret) func() (map[string][]string, []byte) {
		return func() (map[string][]string, []byte) {
			h, err := webhook.Sign(secrets, vectorID, at, body)
			if err != nil {
				t.Fatal(err)
			}
			return h, body
		}
	}
	for _, c := range []struct {
		name    string
		secrets []webhook.Secret // what the receiver accepts
		signed  func() (map[string][]string, []byte)
		edit    func(h map[string][]string, b []byte) []byte
		now     time.Time
		want    error
	}{
		{"valid", []webhook.Secret{cur}, signed(cur), nil, at, nil},
		{"within the tolerance, late", []webhook.Secret{cur}, signed(cur), nil, at.Add(webhook.DefaultTolerance), nil},
		{"within the tolerance, early", []webhook.Secret{cur}, signed(cur), nil, at.Add(-webhook.DefaultTolerance), nil},
		{"rotation: signed with both, receiver knows the new one", []webhook.Secret{cur}, signed(cur, old), nil, at, nil},
		{"rotation: signed with both, receiver knows only the old one", []webhook.Secret{old}, signed(cur, old), nil, at, nil},
		{"rotation: receiver accepts both, signed with the new one", []webhook.Secret{old, cur}, signed(cur), nil, at, nil},
		{"another secret", []webhook.Secret{stranger}, signed(cur), nil, at, webhook.ErrNoMatch},
		{"body changed", []webhook.Secret{cur}, signed(cur), func(_ map[string][]string, b []byte) []byte {
			return []byte(strings.Replace(string(b), "2432232314", "2432232315", 1))
		}, at, webhook.ErrNoMatch},
		{"body re-encoded", []webhook.Secret{cur}, signed(cur), func(_ map[string][]string, b []byte) []byte {
			return []byte(strings.ReplaceAll(string(b), " ", ""))
		}, at, webhook.ErrNoMatch},
		{"id changed", []webhook.Secret{cur}, signed(cur), func(h map[string][]string, b []byte) []byte {
			h[canon(webhook.HeaderID)] = []string{"msg_other"}
			return b
		}, at, webhook.ErrNoMatch},
		{"timestamp moved inside the window", []webhook.Secret{cur}, signed(cur), func(h map[string][]string, b []byte) []byte {
			h[canon(webhook.HeaderTimestamp)] = []string{strconv.Itoa(vectorTS + 1)}
			return b
		}, at, webhook.ErrNoMatch},
		{"replayed later", []webhook.Secret{cur}, signed(cur), nil, at.Add(webhook.DefaultTolerance + time.Second), webhook.ErrTimestamp},
		{"from the future", []webhook.Secret{cur}, signed(cur), nil, at.Add(-webhook.DefaultTolerance - time.Second), webhook.ErrTimestamp},
		{"unsigned", []webhook.Secret{cur}, signed(cur), func(h map[string][]string, b []byte) []byte {
			delete(h, canon(webhook.HeaderSignature))
			return b
		}, at, webhook.ErrMissingHeaders},
		{"another scheme's signature", []webhook.Secret{cur}, signed(cur), func(h map[string][]string, b []byte) []byte {
			sig := h[canon(webhook.HeaderSignature)][0]
			h[canon(webhook.HeaderSignature)] = []string{"v1a," + strings.TrimPrefix(sig, "v1,")}
			return b
		}, at, webhook.ErrNoMatch},
		{"no secret configured", nil, signed(cur), nil, at, webhook.ErrNoMatch},
	} {
		t.Run(c.name, func(t *testing.T) {
			h, b := c.signed()
			if c.edit != nil {
				b = c.edit(h, b)
			}
			err := webhook.Verify(c.secrets, h, b, c.now, 0)
			if !errors.Is(err, c.want) || (c.want == nil) != (err == nil) {
				t.Fatalf("Verify = %v, want %v", err, c.want)
			}
		})
	}
}

func canon(h string) string {
	return map[string]string{webhook.HeaderID: "Webhook-Id", webhook.HeaderTimestamp: "Webhook-Timestamp", webhook.HeaderSignature: "Webhook-Signature"}[h]
}

func TestSecretsParseStrictlyAndNeverPrint(t *testing.T) {
	for _, bad := range []string{"", "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "whsec_", "whsec_not base64!", "whsec_" + strings.Repeat("A", 28), "whsec_" + strings.Repeat("A", 100)} {
		if _, err := webhook.ParseSecret(bad); !errors.Is(err, webhook.ErrSecret) {
			t.Errorf("ParseSecret(%q) = %v, want ErrSecret", bad, err)
		}
		if _, err := webhook.ParseSecret(bad); err != nil && len(bad) > 10 && strings.Contains(err.Error(), bad) {
			t.Errorf("the error quotes the secret: %v", err)
		}
	}
	s, text := webhook.NewSecret()
	back, err := webhook.ParseSecret(text)
	if err != nil {
		t.Fatal(err)
	}
	h1, _ := webhook.Sign([]webhook.Secret{s}, "msg_1", time.Unix(1, 0), nil)
	h2, _ := webhook.Sign([]webhook.Secret{back}, "msg_1", time.Unix(1, 0), nil)
	if h1.Get(webhook.HeaderSignature) != h2.Get(webhook.HeaderSignature) {
		t.Fatal("a secret does not survive its serialization")
	}
	key := strings.TrimPrefix(text, "whsec_")
	for _, shown := range []string{fmt.Sprint(s), fmt.Sprintf("%v %+v %#v %s", s, s, s, s)} {
		if strings.Contains(shown, key) || !strings.Contains(shown, "redacted") {
			t.Errorf("a secret prints as %q", shown)
		}
	}
}

func TestSignRefusesAnIDThatWouldBlurTheSignedContent(t *testing.T) {
	s, _ := webhook.NewSecret()
	for _, id := range []string{"", "msg.1", "msg 1"} {
		if _, err := webhook.Sign([]webhook.Secret{s}, id, time.Unix(1, 0), nil); err == nil {
			t.Errorf("Sign accepted id %q", id)
		}
	}
	if _, err := webhook.Sign(nil, "msg_1", time.Unix(1, 0), nil); err == nil {
		t.Error("Sign with no secret")
	}
}

// TestTenantKeysSeparateTenantsAndVersions: a delivery signed with one
// tenant's key verifies with that key only: not with another tenant's,
// another version's, or the deployment secret itself; and the derivation
// is stable (a receiver's key stays valid across cold starts).
func TestTenantKeysSeparateTenantsAndVersions(t *testing.T) {
	base, err := webhook.ParseSecret("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
	if err != nil {
		t.Fatal(err)
	}
	a1, a2, b1 := base.ForTenant("tenant-a", 1), base.ForTenant("tenant-a", 2), base.ForTenant("tenant-b", 1)
	if a1.Reveal() != base.ForTenant("tenant-a", 1).Reveal() {
		t.Fatal("the derivation is not stable")
	}
	now := time.Unix(1_700_000_000, 0)
	body := []byte(`{"type":"job.succeeded"}`)
	h, err := webhook.Sign([]webhook.Secret{a1}, "msg_1", now, body)
	if err != nil {
		t.Fatal(err)
	}
	if err := webhook.Verify([]webhook.Secret{a1}, h, body, now, 0); err != nil {
		t.Fatalf("the tenant's own key: %v", err)
	}
	for name, other := range map[string]webhook.Secret{"another tenant": b1, "another version": a2, "the deployment secret": base} {
		if err := webhook.Verify([]webhook.Secret{other}, h, body, now, 0); err != webhook.ErrNoMatch {
			t.Errorf("%s verifies a delivery for tenant-a: err = %v", name, err)
		}
	}
	// A tenant name cannot be chosen to collide with another's version.
	if base.ForTenant("t1", 1).Reveal() == base.ForTenant("t", 11).Reveal() {
		t.Error("tenant and version run together")
	}
	if back, err := webhook.ParseSecret(a1.Reveal()); err != nil || back.Reveal() != a1.Reveal() {
		t.Errorf("a revealed key does not parse back: %v", err)
	}
}
