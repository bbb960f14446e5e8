package api

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/aijobs/aijobs/pkg/job"
	"github.com/aijobs/aijobs/pkg/memstore"
	"github.com/aijobs/aijobs/pkg/webhook"
	"github.com/aijobs/aijobs/pkg/wire"
)

// withSigning gives e's handler the key routes over a memory tenants
// table and one deployment secret, whose reads it counts.
func withSigning(t *testing.T, e *env, secretErr error) (webhook.Secret, *int) {
	t.Helper()
	deployment, _ := webhook.NewSecret()
	reads := new(int)
	h := e.handler(e.store)
	h.signing = &Signing{Keys: memstore.NewTenants(), Secrets: func(context.Context) ([]webhook.Secret, error) {
		*reads++
		return []webhook.Secret{deployment}, secretErr
	}}
	e.h = h
	return deployment, reads
}

// tenantA is the tenant the request fixture's caller is (tenantOf
// namespaces it by its source).
func tenantA(t *testing.T) string {
	return tenantOf(request(t, "GET", "/webhook-key", "").RequestContext)
}

func decodeKey(t *testing.T, body string) wire.WebhookKey {
	t.Helper()
	var k wire.WebhookKey
	if err := json.Unmarshal([]byte(body), &k); err != nil {
		t.Fatalf("decode %s: %v", body, err)
	}
	return k
}

// TestEachTenantGetsAKeyOfItsOwn: GET /webhook-key answers the caller's
// own derived key, another tenant another one, and neither is the
// deployment secret.
func TestEachTenantGetsAKeyOfItsOwn(t *testing.T) {
	e := newEnv(t)
	deployment, _ := withSigning(t, e, nil)
	resp := e.do(t, request(t, "GET", "/webhook-key", ""))
	if resp.StatusCode != http.StatusOK || resp.Headers["Cache-Control"] != "no-store" {
		t.Fatalf("status %d, headers %v: %s", resp.StatusCode, resp.Headers, resp.Body)
	}
	a := decodeKey(t, resp.Body)
	if a.Version != 1 || a.Secret != deployment.ForTenant(tenantA(t), 1).Reveal() || len(a.Signing) != 1 || a.Signing[0].Secret != a.Secret {
		t.Fatalf("tenant-a's key = %+v", a)
	}
	b := decodeKey(t, e.do(t, asTenant(request(t, "GET", "/webhook-key", ""), "tenant-b")).Body)
	if b.Secret == a.Secret || b.Secret == deployment.Reveal() || a.Secret == deployment.Reveal() {
		t.Fatal("two tenants share a key, or a tenant is given the deployment secret")
	}
	if strings.Contains(e.logs.String(), "whsec_") {
		t.Fatal("a key reached the log")
	}
}

// TestARotationIsAppliedOnceAndKeepsTheOldKeySigning: a rotation from the
// current version makes version 2 with version 1 still signing until a
// day later; its retry (the answer lost) does not rotate again; a rotation
// from a version no longer current is 409 key_version_moved.
func TestARotationIsAppliedOnceAndKeepsTheOldKeySigning(t *testing.T) {
	e := newEnv(t)
	deployment, _ := withSigning(t, e, nil)
	rotate := func(body string) (int, string) {
		resp := e.do(t, request(t, "POST", "/webhook-key/rotate", body))
		return resp.StatusCode, resp.Body
	}
	status, body := rotate(`{"version":1}`)
	k := decodeKey(t, body)
	if status != http.StatusOK || k.Version != 2 || k.Secret != deployment.ForTenant(tenantA(t), 2).Reveal() || len(k.Signing) != 2 {
		t.Fatalf("rotate: %d %+v", status, k)
	}
	if old := k.Signing[1]; old.Version != 1 || old.Until == nil || !old.Until.Equal(t0.Add(job.KeyOverlap)) ||
		old.Secret != deployment.ForTenant(tenantA(t), 1).Reveal() {
		t.Fatalf("the rotated-away key: %+v", old)
	}
	if status, body := rotate(`{"version":1}`); status != http.StatusOK || decodeKey(t, body).Version != 2 {
		t.Fatalf("a retried rotation: %d %s, want version 2 again", status, body)
	}
	rotate(`{"version":2}`)
	wantProblem(t, e.do(t, request(t, "POST", "/webhook-key/rotate", `{"version":1}`)), http.StatusConflict, wire.CodeKeyVersionMoved, "version")
	if k := decodeKey(t, e.do(t, asTenant(request(t, "GET", "/webhook-key", ""), "tenant-b")).Body); k.Version != 1 {
		t.Fatalf("another tenant's key moved: %+v", k)
	}
}

func TestARotationWithABadBodyIsRefused(t *testing.T) {
	e := newEnv(t)
	withSigning(t, e, nil)
	for _, body := range []string{``, `{}`, `{"version":0}`, `{"version":"1"}`, `{"version":1,"x":2}`, `[1]`} {
		resp := e.do(t, request(t, "POST", "/webhook-key/rotate", body))
		if resp.StatusCode != http.StatusBadRequest {
			t.Errorf("body %q: status %d %s, want 400", body, resp.StatusCode, resp.Body)
		}
	}
	if k := decodeKey(t, e.do(t, request(t, "GET", "/webhook-key", "")).Body); k.Version != 1 {
		t.Fatalf("a refused rotation rotated: %+v", k)
	}
}

// TestTheKeyRoutesWithoutCallbacksOrSecret: a deployment with no callbacks
// answers 404; a secret that cannot be read is 503, never a key or the
// secret's error text.
func TestTheKeyRoutesWithoutCallbacksOrSecret(t *testing.T) {
	e := newEnv(t)
	wantProblem(t, e.do(t, request(t, "GET", "/webhook-key", "")), http.StatusNotFound, wire.CodeNotFound, "")
	wantProblem(t, e.do(t, request(t, "POST", "/webhook-key/rotate", `{"version":1}`)), http.StatusNotFound, wire.CodeNotFound, "")
	_, reads := withSigning(t, e, errors.New("secretsmanager: AccessDeniedException vendor-text"))
	resp := e.do(t, request(t, "GET", "/webhook-key", ""))
	wantProblem(t, resp, http.StatusInternalServerError, wire.CodeInternal, "")
	if strings.Contains(resp.Body, "vendor-text") || *reads != 1 {
		t.Fatalf("answer %s, %d secret reads", resp.Body, *reads)
	}
	// The job routes never read the secret.
	e.mustCreate(t, "no-secret-read")
	if *reads != 1 {
		t.Fatalf("a create read the signing secret (%d reads)", *reads)
	}
}
