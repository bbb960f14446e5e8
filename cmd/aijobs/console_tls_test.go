package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestTheConsoleServesTLSAndMarksItsCookieSecure: with --tls-cert and
// --tls-key the console prints (and opens) an https URL, and the cookie
// its visit sets is Secure, so the browser never sends it in clear.
func TestTheConsoleServesTLSAndMarksItsCookieSecure(t *testing.T) {
	vars, _ := operatorEnv(t)
	certFile, keyFile, pool := selfSigned(t)
	ctx, cancel := context.WithCancel(context.Background())
	opened := make(chan string, 1)
	e := &env{stdin: strings.NewReader(""), stdout: &syncBuffer{}, stderr: &syncBuffer{}, getenv: func(k string) string { return vars[k] },
		loadAWS: loadAWS, openURL: func(u string) error { opened <- u; return nil }}
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"console", "--listen", "127.0.0.1:0", "--tls-cert", certFile, "--tls-key", keyFile, "--open"}, e)
	}()
	t.Cleanup(func() { cancel(); <-done })
	var u string
	select {
	case u = <-opened:
	case err := <-done:
		t.Fatalf("console ended: %v %s", err, e.stderr)
	case <-time.After(20 * time.Second):
		t.Fatal("the console opened no URL")
	}
	if !strings.HasPrefix(u, "https://127.0.0.1:") || !strings.Contains(u, "/?code=") {
		t.Fatalf("URL %s", u)
	}
	cl := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := cl.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if cks := resp.Cookies(); resp.StatusCode != http.StatusSeeOther || len(cks) != 1 || !cks[0].Secure || !cks[0].HttpOnly {
		t.Fatalf("%d, cookies %+v", resp.StatusCode, cks)
	}
}

// TestConsoleOpenNeverPutsTheTokenOnACommandLine: the opener's argument
// is on its command line, readable by every local user while it runs
// (/proc/<pid>/cmdline). --open hands it a URL with a one-time code,
// not the access token the console prints; the code's visit sets the
// cookie once, and a second visit with it is refused (issue O item 5.2).
func TestConsoleOpenNeverPutsTheTokenOnACommandLine(t *testing.T) {
	vars, _ := operatorEnv(t)
	ctx, cancel := context.WithCancel(context.Background())
	opened := make(chan string, 1)
	out := &syncBuffer{}
	e := &env{stdin: strings.NewReader(""), stdout: out, stderr: &syncBuffer{}, getenv: func(k string) string { return vars[k] },
		loadAWS: loadAWS, openURL: func(u string) error { opened <- u; return nil }}
	done := make(chan error, 1)
	go func() { done <- run(ctx, []string{"console", "--listen", "127.0.0.1:0", "--open"}, e) }()
	t.Cleanup(func() { cancel(); <-done })
	var u string
	select {
	case u = <-opened:
	case err := <-done:
		t.Fatalf("console ended: %v %s", err, e.stderr)
	case <-time.After(20 * time.Second):
		t.Fatal("the console opened no URL")
	}
	token := regexp.MustCompile(`\?token=([0-9a-f]+)`).FindStringSubmatch(out.String())
	if token == nil {
		t.Fatalf("the console printed no token: %q", out)
	}
	if strings.Contains(u, token[1]) || !strings.Contains(u, "/?code=") {
		t.Fatalf("the opener got %s; the token is %s", u, token[1])
	}
	cl := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	for i, want := range []int{http.StatusSeeOther, http.StatusUnauthorized} {
		resp, err := cl.Get(u)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want || len(resp.Cookies()) != i^1 {
			t.Fatalf("visit %d: %d, cookies %+v; want %d", i+1, resp.StatusCode, resp.Cookies(), want)
		}
	}
}

// selfSigned writes a certificate for 127.0.0.1 and its key, and returns
// a pool that trusts it.
func selfSigned(t *testing.T) (certFile, keyFile string, pool *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "aijobs console test"},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	for file, block := range map[string]*pem.Block{certFile: {Type: "CERTIFICATE", Bytes: der}, keyFile: {Type: "EC PRIVATE KEY", Bytes: kder}} {
		if err := os.WriteFile(file, pem.EncodeToMemory(block), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	pool = x509.NewCertPool()
	pool.AddCert(cert)
	return certFile, keyFile, pool
}
