package client_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/credentials"

	"github.com/aijobs/aijobs/pkg/client"
)

// verifier re-derives a SigV4 signature as API Gateway does: it rebuilds
// the request from the headers the Authorization header says were signed,
// hashes the body it received, signs that with the same credentials at the
// x-amz-date time, and compares the Authorization headers.
type verifier struct {
	creds  aws.Credentials
	region string
	t      *testing.T
	got    chan http.Header
}

func (v *verifier) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if err := v.verify(r); err != nil {
		v.t.Logf("signature refused: %v", err)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusForbidden)
		_, _ = io.WriteString(w, `{"message":"The request signature we calculated does not match the signature you provided."}`)
		return
	}
	v.got <- r.Header.Clone()
	w.Header().Set("Content-Type", "application/json")
	_, _ = io.WriteString(w, `{"id":"job_aaaaaaaaaaaaaaaaaaaaaaaaaa","state":"queued","version":1}`)
}

func (v *verifier) verify(r *http.Request) error {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return err
	}
	sum := sha256.Sum256(body)
	hash := hex.EncodeToString(sum[:])
	if got := r.Header.Get("X-Amz-Content-Sha256"); got != hash {
		return fmt.Errorf("x-amz-content-sha256 %q is not the body's hash %q", got, hash)
	}
	signedAt, err := time.Parse("20060102T150405Z", r.Header.Get("X-Amz-Date"))
	if err != nil {
		return fmt.Errorf("x-amz-date: %w", err)
	}
	auth := r.Header.Get("Authorization")
	_, list, ok := strings.Cut(auth, "SignedHeaders=")
	if !ok {
		return fmt.Errorf("no SignedHeaders in %q", auth)
	}
	list, _, _ = strings.Cut(list, ",")
	re, err := http.NewRequest(r.Method, "http://"+r.Host+r.URL.RequestURI(), bytes.NewReader(body))
	if err != nil {
		return err
	}
	for _, h := range strings.Split(list, ";") {
		if h == "host" || h == "content-length" {
			continue // the signer takes them from the request itself
		}
		re.Header[http.CanonicalHeaderKey(h)] = r.Header.Values(h)
	}
	if err := v4.NewSigner().SignHTTP(context.Background(), v.creds, re, hash, "execute-api", v.region, signedAt); err != nil {
		return err
	}
	if want := re.Header.Get("Authorization"); want != auth {
		return fmt.Errorf("authorization\n got %s\nwant %s", auth, want)
	}
	return nil
}

func TestSigV4SignsWhatTheGatewayVerifies(t *testing.T) {
	const region = "eu-west-1"
	creds := aws.Credentials{AccessKeyID: "AKIDEXAMPLE", SecretAccessKey: "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", SessionToken: "session-token-xyz"}
	signedAt := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	newSigned := func(t *testing.T, url string, c aws.Credentials, doer client.Doer) *client.Client {
		c2, err := client.New(client.Config{
			BaseURL: url, MaxRetries: -1, HTTP: doer,
			Auth: client.SigV4{Region: region, Credentials: credentials.NewStaticCredentialsProvider(c.AccessKeyID, c.SecretAccessKey, c.SessionToken)},
			Now:  func() time.Time { return signedAt },
		})
		if err != nil {
			t.Fatal(err)
		}
		return c2
	}

	t.Run("a signed create, get and cancel verify", func(t *testing.T) {
		v := &verifier{creds: creds, region: region, t: t, got: make(chan http.Header, 3)}
		srv := httptest.NewServer(v)
		defer srv.Close()
		c := newSigned(t, srv.URL+"/prod", creds, nil) // a named stage in the path
		ctx := context.Background()
		if _, _, err := c.Submit(ctx, "key-1", prompt("hello")); err != nil {
			t.Fatalf("Submit: %v", err)
		}
		if _, err := c.Get(ctx, "job_aaaaaaaaaaaaaaaaaaaaaaaaaa", ""); err != nil {
			t.Fatalf("Get: %v", err)
		}
		if _, err := c.Cancel(ctx, "job_aaaaaaaaaaaaaaaaaaaaaaaaaa"); err != nil {
			t.Fatalf("Cancel: %v", err)
		}
		if len(v.got) != 3 {
			t.Fatalf("%d requests verified, want 3", len(v.got))
		}
		h := <-v.got
		if h.Get("X-Amz-Date") != "20261202T100000Z" {
			t.Errorf("x-amz-date = %q", h.Get("X-Amz-Date"))
		}
		if h.Get("X-Amz-Security-Token") != creds.SessionToken {
			t.Errorf("x-amz-security-token = %q", h.Get("X-Amz-Security-Token"))
		}
		auth := h.Get("Authorization")
		if !strings.HasPrefix(auth, "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20261202/eu-west-1/execute-api/aws4_request, ") {
			t.Errorf("authorization = %q", auth)
		}
		for _, signed := range []string{"host", "idempotency-key", "x-amz-content-sha256", "x-amz-date", "x-amz-security-token"} {
			if !strings.Contains(auth, signed) {
				t.Errorf("%s is not signed: %s", signed, auth)
			}
		}
	})

	t.Run("another secret does not verify", func(t *testing.T) {
		v := &verifier{creds: creds, region: region, t: t, got: make(chan http.Header, 1)}
		srv := httptest.NewServer(v)
		defer srv.Close()
		wrong := creds
		wrong.SecretAccessKey = "not-the-secret"
		_, err := newSigned(t, srv.URL, wrong, nil).Get(context.Background(), "job_aaaaaaaaaaaaaaaaaaaaaaaaaa", "")
		if e := apiError(t, err); e.Status != http.StatusForbidden || !strings.Contains(e.Detail, "signature") {
			t.Errorf("error = %+v", e)
		}
	})

	// The payload hash is signed: a body changed in flight, with its hash
	// header updated to match, fails the signature itself.
	t.Run("a body changed after signing does not verify", func(t *testing.T) {
		v := &verifier{creds: creds, region: region, t: t, got: make(chan http.Header, 1)}
		srv := httptest.NewServer(v)
		defer srv.Close()
		tamper := doerFunc(func(r *http.Request) (*http.Response, error) {
			b, _ := io.ReadAll(r.Body)
			b = bytes.Replace(b, []byte("hello"), []byte("HELLO"), 1)
			r.Body, r.ContentLength = io.NopCloser(bytes.NewReader(b)), int64(len(b))
			sum := sha256.Sum256(b)
			r.Header.Set("X-Amz-Content-Sha256", hex.EncodeToString(sum[:]))
			return http.DefaultClient.Do(r)
		})
		_, _, err := newSigned(t, srv.URL, creds, tamper).Submit(context.Background(), "key-1", prompt("hello"))
		if e := apiError(t, err); e.Status != http.StatusForbidden {
			t.Errorf("error = %v", err)
		}
		if len(v.got) != 0 {
			t.Error("the tampered request was accepted")
		}
	})
}

func TestSigV4WithoutSessionTokenSendsNone(t *testing.T) {
	var got http.Header
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = r.Header.Clone()
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"id":"job_aaaaaaaaaaaaaaaaaaaaaaaaaa","state":"queued","version":1}`)
	}))
	defer srv.Close()
	c, err := client.New(client.Config{BaseURL: srv.URL,
		Auth: client.SigV4{Region: "us-east-1", Credentials: credentials.NewStaticCredentialsProvider("AKID", "SECRET", "")}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Get(context.Background(), "job_aaaaaaaaaaaaaaaaaaaaaaaaaa", ""); err != nil {
		t.Fatal(err)
	}
	if got.Get("X-Amz-Security-Token") != "" || got.Get("X-Amz-Date") == "" || got.Get("X-Amz-Content-Sha256") == "" {
		t.Errorf("headers = %v", got)
	}
	// The hash of no body.
	if got.Get("X-Amz-Content-Sha256") != "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855" {
		t.Errorf("x-amz-content-sha256 = %q", got.Get("X-Amz-Content-Sha256"))
	}
}

type doerFunc func(*http.Request) (*http.Response, error)

func (f doerFunc) Do(r *http.Request) (*http.Response, error) { return f(r) }
