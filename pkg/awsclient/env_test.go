package awsclient_test

import (
	"encoding/pem"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aijobs/aijobs/pkg/awsclient"
)

// lambdaEnv is the environment Lambda gives a function: the execution
// role's credentials in AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and
// AWS_SESSION_TOKEN, its region in AWS_REGION (AWS Lambda Developer Guide,
// "Defined runtime environment variables"). It cannot be had here, so the
// tests write it.
func lambdaEnv(over map[string]string) func(string) string {
	env := map[string]string{
		"AWS_ACCESS_KEY_ID": "ASIAFUNCTIONROLE", "AWS_SECRET_ACCESS_KEY": "role-secret",
		"AWS_SESSION_TOKEN": "role-session-token", "AWS_REGION": "eu-west-1",
	}
	for k, v := range over {
		if v == "" {
			delete(env, k)
		} else {
			env[k] = v
		}
	}
	return func(k string) string { return env[k] }
}

func TestEnvSignsWithTheFunctionRolesCredentials(t *testing.T) {
	cfg, err := awsclient.Env(lambdaEnv(nil))(t.Context(), awsclient.Config{})
	if err != nil {
		t.Fatal(err)
	}
	creds, err := cfg.Credentials.Retrieve(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if creds.AccessKeyID != "ASIAFUNCTIONROLE" || creds.SecretAccessKey != "role-secret" || creds.SessionToken != "role-session-token" {
		t.Errorf("credentials %q/%q/%q, want the environment's", creds.AccessKeyID, creds.SecretAccessKey, creds.SessionToken)
	}
	if creds.CanExpire {
		t.Error("environment credentials expire; Lambda renews them by starting a new environment, so nothing would refresh them")
	}
	if cfg.Region != "eu-west-1" {
		t.Errorf("region %q, want AWS_REGION's eu-west-1", cfg.Region)
	}
	if cfg.BaseEndpoint != nil {
		t.Errorf("endpoint %q for real AWS", *cfg.BaseEndpoint)
	}
	if cfg.HTTPClient == nil {
		t.Error("no HTTP client: the model providers share the SDK's transport")
	}
}

func TestEnvLeavesTheConfiguredRegionAndNeedsNoSessionToken(t *testing.T) {
	cfg, err := awsclient.Env(lambdaEnv(map[string]string{"AWS_SESSION_TOKEN": ""}))(t.Context(), awsclient.Config{Region: "us-west-2"})
	if err != nil {
		t.Fatal(err)
	}
	creds, err := cfg.Credentials.Retrieve(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if creds.SessionToken != "" || creds.AccessKeyID != "ASIAFUNCTIONROLE" {
		t.Errorf("credentials %q with token %q, want the long-term keys alone", creds.AccessKeyID, creds.SessionToken)
	}
	if cfg.Region != "us-west-2" {
		t.Errorf("region %q, want the configured us-west-2 over AWS_REGION", cfg.Region)
	}
	cfg, err = awsclient.Env(lambdaEnv(map[string]string{"AWS_REGION": ""}))(t.Context(), awsclient.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Region != "us-east-1" {
		t.Errorf("region %q without AWS_REGION, want us-east-1", cfg.Region)
	}
}

// A function without credentials fails when it starts, naming what is
// missing and never showing what is set.
func TestEnvWithoutCredentialsFailsNow(t *testing.T) {
	for _, unset := range []string{"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"} {
		_, err := awsclient.Env(lambdaEnv(map[string]string{unset: ""}))(t.Context(), awsclient.Config{})
		if !errors.Is(err, awsclient.ErrNoCredentials) {
			t.Fatalf("without %s: %v, want ErrNoCredentials", unset, err)
		}
		if !strings.Contains(err.Error(), unset) {
			t.Errorf("without %s: %q does not name it", unset, err)
		}
		for _, secret := range []string{"ASIAFUNCTIONROLE", "role-secret", "role-session-token"} {
			if strings.Contains(err.Error(), secret) {
				t.Errorf("without %s: %q shows a credential", unset, err)
			}
		}
	}
	if _, err := awsclient.Load(t.Context(), awsclient.Config{Region: "us-east-1"}); !errors.Is(err, awsclient.ErrNoCredentials) {
		t.Errorf("Load for real AWS without credentials: %v, want ErrNoCredentials", err)
	}
}

// An emulator needs no credentials from the environment: it gets the
// dummy ones and its endpoint, as under the default chain.
func TestEnvWithAnEmulatorUsesDummyCredentials(t *testing.T) {
	getenv := lambdaEnv(map[string]string{"AWS_ACCESS_KEY_ID": "", "AWS_SECRET_ACCESS_KEY": "", "AWS_SESSION_TOKEN": ""})
	cfg, err := awsclient.Env(getenv)(t.Context(), awsclient.Config{Endpoint: "http://127.0.0.1:4566"})
	if err != nil {
		t.Fatal(err)
	}
	creds, err := cfg.Credentials.Retrieve(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if creds.AccessKeyID != "test" || cfg.BaseEndpoint == nil || *cfg.BaseEndpoint != "http://127.0.0.1:4566" {
		t.Errorf("credentials %q, endpoint %v: want the emulator's dummy ones and its endpoint", creds.AccessKeyID, cfg.BaseEndpoint)
	}
}

// AWS_CA_BUNDLE's certificates are the roots of the configuration's HTTP
// client (and so of the model providers', which share its transport), as
// under the default chain.
func TestEnvTrustsTheCABundle(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	t.Cleanup(srv.Close)
	bundle := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(bundle, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	get := func(getenv func(string) string) error {
		cfg, err := awsclient.Env(getenv)(t.Context(), awsclient.Config{})
		if err != nil {
			return err
		}
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, srv.URL, nil)
		resp, err := cfg.HTTPClient.Do(req)
		if err != nil {
			return err
		}
		return resp.Body.Close()
	}
	if err := get(lambdaEnv(map[string]string{"AWS_CA_BUNDLE": bundle})); err != nil {
		t.Errorf("with the server's certificate in AWS_CA_BUNDLE: %v", err)
	}
	if err := get(lambdaEnv(nil)); err == nil {
		t.Error("without AWS_CA_BUNDLE the test server's certificate was trusted: the test proves nothing")
	}
	empty := filepath.Join(t.TempDir(), "empty.pem")
	if err := os.WriteFile(empty, []byte("not a certificate"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := get(lambdaEnv(map[string]string{"AWS_CA_BUNDLE": empty})); err == nil || !strings.Contains(err.Error(), "no PEM certificate") {
		t.Errorf("a bundle without certificates: %v, want an error now", err)
	}
}
