// Package awstest gives integration tests a real AWS API to talk to: the
// endpoint in AWS_ENDPOINT_URL when set (LocalStack, real AWS), otherwise a
// kumo emulator this test binary starts on a free loopback port and stops at
// the end. A missing emulator fails the test; it never skips.
package awstest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/aijobs/aijobs/internal/kumo"
	"github.com/aijobs/aijobs/pkg/awsclient"
)

var (
	once     sync.Once
	endpoint string
	startErr error
	proc     *kumo.Process
)

// Main runs the tests of a package and stops the emulator it started.
// Use it from TestMain: func TestMain(m *testing.M) { os.Exit(awstest.Main(m)) }.
func Main(m *testing.M) int {
	code := m.Run()
	proc.Stop()
	return code
}

// Endpoint returns the endpoint to test against, starting kumo on first use.
func Endpoint(t testing.TB) string {
	t.Helper()
	once.Do(func() {
		if e := os.Getenv("AWS_ENDPOINT_URL"); e != "" {
			endpoint = e
			return
		}
		proc, startErr = kumo.Start()
		if startErr == nil {
			endpoint = proc.Endpoint
		}
	})
	if startErr != nil {
		t.Fatalf("no AWS endpoint for integration tests: %v (run `make kumo`, or set AWS_ENDPOINT_URL)", startErr)
	}
	return endpoint
}

// Config returns an SDK configuration for Endpoint.
func Config(t testing.TB, counter *awsclient.Counter) aws.Config {
	t.Helper()
	ep := Endpoint(t)
	region := os.Getenv("AWS_REGION")
	if region == "" {
		region = "us-east-1"
	}
	cfg, err := awsclient.Load(context.Background(), awsclient.Config{Region: region, Endpoint: ep, Counter: counter})
	if err != nil {
		t.Fatalf("aws config: %v", err)
	}
	return cfg
}

// Prefix returns a resource-name prefix unique to this test, so tests and
// packages can run in parallel against one emulator.
func Prefix(t testing.TB) string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	name := strings.ToLower(t.Name())
	name = strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			return r
		}
		return '-'
	}, name)
	if len(name) > 30 {
		name = name[:30]
	}
	return "t-" + name + "-" + hex.EncodeToString(b)
}
