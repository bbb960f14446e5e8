package client_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"

	"github.com/aijobs/aijobs/pkg/client"
)

func TestNewRefusesBadConfig(t *testing.T) {
	creds := credentials.NewStaticCredentialsProvider("AKID", "SECRET", "")
	tests := []struct {
		name string
		cfg  client.Config
		want string
	}{
		{"no base URL", client.Config{}, "BaseURL is required"},
		{"not http", client.Config{BaseURL: "ftp://example.com"}, "scheme"},
		{"no host", client.Config{BaseURL: "http:///jobs"}, "no host"},
		{"credentials in the URL", client.Config{BaseURL: "https://user:pw@example.com"}, "must not carry credentials"},
		{"a query", client.Config{BaseURL: "https://example.com/?x=1"}, "query"},
		{"empty bearer token", client.Config{BaseURL: "http://x", Auth: client.BearerToken("")}, "bearer token is empty"},
		{"SigV4 without region", client.Config{BaseURL: "https://x", Auth: client.SigV4{Credentials: creds}}, "region"},
		{"SigV4 without credentials", client.Config{BaseURL: "https://x", Auth: client.SigV4{Region: "eu-west-1"}}, "credentials"},
		{"PollMax below PollMin", client.Config{BaseURL: "http://x", PollMin: time.Minute, PollMax: time.Second}, "PollMax"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := client.New(tt.cfg)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("New = %v, want an error with %q", err, tt.want)
			}
			if strings.Contains(err.Error(), "pw") {
				t.Errorf("the error shows the URL's password: %v", err)
			}
		})
	}
}

func TestConfigNeverFormatsSecrets(t *testing.T) {
	for _, auth := range []client.Authorizer{
		client.BearerToken("tok-SECRET-123"),
		client.SigV4{Region: "eu-west-1", Credentials: credentials.NewStaticCredentialsProvider("AKID", "tok-SECRET-123", "tok-SECRET-123")},
	} {
		cfg := client.Config{BaseURL: "http://x", Auth: auth}
		for _, verb := range []string{"%v", "%+v", "%#v", "%s"} {
			if s := fmt.Sprintf(verb, cfg); strings.Contains(s, "SECRET") {
				t.Errorf("%s of the config shows a secret: %s", verb, s)
			}
		}
	}
}

type failingCreds struct{}

func (failingCreds) Retrieve(context.Context) (aws.Credentials, error) {
	return aws.Credentials{}, errors.New("no profile")
}

func TestCredentialErrorsAreNotRetried(t *testing.T) {
	srv := clientServer(t, nil)
	c, sl := newClient(t, srv.URL, "", func(c *client.Config) {
		c.Auth = client.SigV4{Region: "eu-west-1", Credentials: failingCreds{}}
	})
	_, err := c.Get(context.Background(), "job_aaaaaaaaaaaaaaaaaaaaaaaaaa", "")
	var ne *client.NetworkError
	if err == nil || errors.As(err, &ne) || !strings.Contains(err.Error(), "no profile") {
		t.Fatalf("err = %v", err)
	}
	if srv.count() != 0 || len(sl.Waits()) != 0 {
		t.Errorf("%d requests, waits %v", srv.count(), sl.Waits())
	}
}
