// Package awstest gives integration tests a real AWS API to talk to: the
// endpoint in AWS_ENDPOINT_URL when set (LocalStack, real AWS), otherwise an
// emulator this test binary starts on a free loopback port and stops at the
// end: kumo, or moto's server when AIJOBS_EMULATOR=moto (`make test-moto`,
// so the same tests meet a second, independent emulator; docs/testing.md,
// "Emulator facts"). A missing emulator fails the test; it never skips.
package awstest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/aijobs/aijobs/internal/kumo"
	"github.com/aijobs/aijobs/internal/moto"
	"github.com/aijobs/aijobs/pkg/awsclient"
)

var (
	once     sync.Once
	endpoint string
	startErr error
	stop     func()
)

// Emulator is the emulator a test binary starts when AWS_ENDPOINT_URL is
// unset: "kumo" (the default) or "moto", from AIJOBS_EMULATOR.
func Emulator() string {
	if e := os.Getenv("AIJOBS_EMULATOR"); e != "" {
		return e
	}
	return "kumo"
}

// OnMoto reports whether the tests run on moto, for a test that shows
// one of moto's own gaps (a reproduction of it with the SDK alone).
func OnMoto() bool { return os.Getenv("AWS_ENDPOINT_URL") == "" && Emulator() == "moto" }

// start runs the chosen emulator and returns its endpoint and its stop.
func start() (string, func(), error) {
	switch e := Emulator(); e {
	case "kumo":
		p, err := kumo.Start()
		if err != nil {
			return "", nil, err
		}
		return p.Endpoint, p.Stop, nil
	case "moto":
		p, err := moto.Start()
		if err != nil {
			return "", nil, err
		}
		// Through a front that hands moto its DynamoDB requests one at a
		// time: DynamoDB's writes are atomic, moto's are not (moto.Front).
		f, err := p.Atomic()
		if err != nil {
			p.Stop()
			return "", nil, err
		}
		return f.Endpoint, func() { f.Stop(); p.Stop() }, nil
	default:
		return "", nil, fmt.Errorf("AIJOBS_EMULATOR=%q: want kumo or moto", e)
	}
}

// Main runs the tests of a package and stops the emulator it started.
// Use it from TestMain: func TestMain(m *testing.M) { os.Exit(awstest.Main(m)) }.
func Main(m *testing.M) int {
	code := m.Run()
	if stop != nil {
		stop()
	}
	return code
}

// Endpoint returns the endpoint to test against, starting the emulator on
// first use.
func Endpoint(t testing.TB) string {
	t.Helper()
	once.Do(func() {
		if e := os.Getenv("AWS_ENDPOINT_URL"); e != "" {
			endpoint = e
			return
		}
		endpoint, stop, startErr = start()
	})
	if startErr != nil {
		t.Fatalf("no AWS endpoint for integration tests: %v (or set AWS_ENDPOINT_URL)", startErr)
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
