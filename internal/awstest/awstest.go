// Package awstest gives integration tests a real AWS API to talk to: the
// endpoint in AWS_ENDPOINT_URL when set (LocalStack, real AWS), otherwise an
// emulator this test binary starts on a free loopback port and stops at the
// end: kumo, or moto's server when AIJOBS_EMULATOR=moto (`make test-moto`,
// so the same tests meet a second, independent emulator; docs/testing.md,
// "Emulator facts"). A missing emulator fails the test; it never skips.
// With AIJOBS_QUOTA=<f> the emulator is served through the quota front
// at f times a real account's rates (docs/testing.md, "The quota front"),
// so the tests meet DynamoDB's and SQS's walls scaled to their load.
package awstest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/aijobs/aijobs/internal/kumo"
	"github.com/aijobs/aijobs/internal/moto"
	"github.com/aijobs/aijobs/internal/quota"
	"github.com/aijobs/aijobs/pkg/awsclient"
)

var (
	once     sync.Once
	endpoint string
	startErr error
	stop     func()
	meter    *quota.Meter
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

// Quota is the scale of a real account's quotas the emulator is held to,
// from AIJOBS_QUOTA (a positive number: 0.01 is a hundredth of
// DynamoDB's units a second per key and of SQS's in-flight messages),
// and false when unset: no front.
func Quota() (float64, bool, error) {
	v := os.Getenv("AIJOBS_QUOTA")
	if v == "" {
		return 0, false, nil
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || f <= 0 {
		return 0, false, fmt.Errorf("AIJOBS_QUOTA=%q: want a positive number, such as 0.01", v)
	}
	return f, true, nil
}

// start runs the chosen emulator, behind the quota front when AIJOBS_QUOTA
// asks for one, and returns its endpoint and its stop.
func start() (string, func(), error) {
	f, on, err := Quota()
	if err != nil {
		return "", nil, err
	}
	ep, stopEmulator, err := startEmulator()
	if err != nil || !on {
		return ep, stopEmulator, err
	}
	front, err := quota.Start(ep, quota.AWS().Scaled(f))
	if err != nil {
		stopEmulator()
		return "", nil, err
	}
	meter = front.Meter
	return front.Endpoint, func() { front.Stop(); stopEmulator() }, nil
}

// startEmulator runs the chosen emulator and returns its endpoint and its
// stop.
func startEmulator() (string, func(), error) {
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

// Meter is what the quota front has metered of every test in this binary
// (the emulator's first user starts it), or nil when AIJOBS_QUOTA is
// unset or AWS_ENDPOINT_URL names the endpoint: no front.
func Meter(t testing.TB) *quota.Meter {
	t.Helper()
	Endpoint(t)
	return meter
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
