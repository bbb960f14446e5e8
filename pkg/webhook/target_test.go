package webhook_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aijobs/aijobs/pkg/webhook"
)

func TestPolicyAllowsOnlyPublicAddresses(t *testing.T) {
	prod, dev := webhook.Policy{}, webhook.Policy{AllowLoopback: true}
	for _, c := range []struct {
		addr      string
		prod, dev bool
	}{
		{"93.184.215.14", true, true},
		{"2606:2800:21f:cb07:6820:80da:af6b:8b2c", true, true},
		{"127.0.0.1", false, true},
		{"127.8.9.10", false, true},
		{"::1", false, true},
		{"::ffff:127.0.0.1", false, true}, // IPv4-mapped loopback
		{"10.1.2.3", false, false},
		{"172.16.0.1", false, false},
		{"192.168.1.1", false, false},
		{"::ffff:10.0.0.1", false, false},
		{"169.254.169.254", false, false}, // EC2 and ECS instance metadata
		{"fd00:ec2::254", false, false},   // EC2 instance metadata over IPv6
		{"169.254.170.2", false, false},   // ECS task credentials
		{"fe80::1", false, false},
		{"fc00::1", false, false},
		{"100.64.0.1", false, false}, // shared address space (carrier NAT)
		{"0.0.0.0", false, false},
		{"::", false, false},
		{"0.1.2.3", false, false},
		{"224.0.0.1", false, false},
		{"ff02::1", false, false},
		{"255.255.255.255", false, false},
		{"240.0.0.1", false, false},
		{"198.18.0.1", false, false},
		{"64:ff9b::a00:1", false, false}, // NAT64 of 10.0.0.1
		// IPv6 forms that embed an IPv4 address netip does not look into.
		{"2002:7f00:1::1", false, false},                       // 6to4 of 127.0.0.1
		{"2002:a9fe:a9fe::1", false, false},                    // 6to4 of 169.254.169.254
		{"2002:a00:1::1", false, false},                        // 6to4 of 10.0.0.1
		{"2002:c0a8:101:1::1", false, false},                   // 6to4 of 192.168.1.1
		{"2002:5db8:d70e::1", true, true},                      // 6to4 of 93.184.215.14: public
		{"2001:0:4136:e378:8000:63bf:3fff:fdd2", false, false}, // Teredo
		{"2001:0:a00:1::1", false, false},                      // Teredo, server 10.0.0.1
		{"fec0::1", false, false},                              // site-local
		{"feff::1", false, false},                              // site-local, its last address
		{"::7f00:1", false, false},                             // IPv4-compatible 127.0.0.1
		{"::a9fe:a9fe", false, false},                          // IPv4-compatible 169.254.169.254
		{"::5db8:d70e", false, false},                          // IPv4-compatible, even of a public address
		{"::ffff:0:7f00:1", false, false},                      // SIIT of 127.0.0.1
		{"::ffff:0:5db8:d70e", false, false},                   // SIIT of a public address
		{"2001:db8::1", false, false},                          // documentation (inside 2001::/23, not Teredo)
		{"203.0.113.7", false, false},                          // documentation
		{"2002:cb00:7107::1", false, false},                    // 6to4 of 203.0.113.7
	} {
		a := netip.MustParseAddr(c.addr)
		if got := prod.Allows(a); got != c.prod {
			t.Errorf("production Allows(%s) = %v", c.addr, got)
		}
		if got := dev.Allows(a); got != c.dev {
			t.Errorf("dev Allows(%s) = %v", c.addr, got)
		}
	}
}

// resolver answers names from a table, as DNS would.
type resolver map[string][]string

func (r resolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	var out []netip.Addr
	for _, s := range r[host] {
		out = append(out, netip.MustParseAddr(s))
	}
	if len(out) == 0 {
		return nil, errors.New("no such host")
	}
	return out, nil
}

func TestCheckRefusesUnsafeCallbackURLs(t *testing.T) {
	r := resolver{
		"hooks.example.com":  {"93.184.215.14"},
		"internal.example":   {"10.0.0.5"},
		"mixed.example":      {"93.184.215.14", "192.168.0.1"}, // one bad answer is enough
		"metadata.example":   {"169.254.169.254"},
		"localhost":          {"127.0.0.1", "::1"},
		"rebind.example.com": {"93.184.215.14"},
		"embedded.example":   {"2606:2800:21f:cb07:6820:80da:af6b:8b2c", "::ffff:0:a9fe:a9fe"}, // SIIT of the metadata address
	}
	ctx := context.Background()
	prod, dev := webhook.Policy{}, webhook.Policy{AllowLoopback: true}
	for _, c := range []struct {
		url       string
		prod, dev bool
	}{
		{"https://hooks.example.com/aijobs?tenant=a", true, true},
		{"https://hooks.example.com:8443/x", true, true},
		{"http://hooks.example.com/x", false, false}, // plain http off loopback
		{"https://internal.example/x", false, false},
		{"https://mixed.example/x", false, false},
		{"https://metadata.example/latest/meta-data/", false, false},
		{"http://169.254.169.254/latest/meta-data/", false, false},
		{"https://[fd00:ec2::254]/", false, false},
		{"https://[2002:a9fe:a9fe::1]/latest/meta-data/", false, false}, // 6to4 of the metadata address
		{"http://[::7f00:1]:9999/hook", false, false},                   // IPv4-compatible loopback is not loopback
		{"https://embedded.example/x", false, false},
		{"http://localhost:9999/hook", false, true},
		{"http://127.0.0.1:9999/hook", false, true},
		{"http://[::1]:9999/hook", false, true},
		{"https://user:pw@hooks.example.com/x", false, false},
		{"https://hooks.example.com/x#frag", false, false},
		{"ftp://hooks.example.com/x", false, false},
		{"/relative", false, false},
		{"https://nowhere.example/x", false, false},
		{"https://hooks.example.com/" + strings.Repeat("a", webhook.MaxURLBytes), false, false},
	} {
		if err := prod.Check(ctx, r, c.url); (err == nil) != c.prod {
			t.Errorf("production Check(%.60s) = %v, want allowed %v", c.url, err, c.prod)
		}
		if err := dev.Check(ctx, r, c.url); (err == nil) != c.dev {
			t.Errorf("dev Check(%.60s) = %v, want allowed %v", c.url, err, c.dev)
		}
		var et *webhook.ErrTarget
		if err := prod.Check(ctx, r, c.url); err != nil && (!errors.As(err, &et) || strings.Contains(err.Error(), "example")) {
			t.Errorf("Check(%.60s) error %q: want an *ErrTarget that quotes no host", c.url, err)
		}
	}
}

// A name checked at create can resolve elsewhere at delivery (DNS
// rebinding): the delivery client checks the address it really dials, so
// a target that now points at loopback or a private address is never
// reached, whatever the URL says.
func TestTheDeliveryClientRefusesWhatItWouldReallyDial(t *testing.T) {
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1) }))
	defer srv.Close()

	_, err := webhook.Policy{}.Client(2*time.Second).Post(srv.URL, "application/json", strings.NewReader("{}"))
	if !webhook.IsRefusedTarget(err) || hits.Load() != 0 {
		t.Fatalf("production client to %s: %v, %d hits; want refused at dial", srv.URL, err, hits.Load())
	}
	// "localhost" resolves through the system resolver at dial time: the
	// name passes no check of its own, the address is what is refused.
	local := strings.Replace(srv.URL, "127.0.0.1", "localhost", 1)
	if _, err := (webhook.Policy{}).Client(2*time.Second).Post(local, "application/json", strings.NewReader("{}")); !webhook.IsRefusedTarget(err) || hits.Load() != 0 {
		t.Fatalf("production client to %s: %v, %d hits", local, err, hits.Load())
	}
	resp, err := webhook.Policy{AllowLoopback: true}.Client(2*time.Second).Post(srv.URL, "application/json", strings.NewReader("{}"))
	if err != nil || resp.StatusCode != http.StatusOK || hits.Load() != 1 {
		t.Fatalf("dev client: %v %v, %d hits", resp, err, hits.Load())
	}
	resp.Body.Close()
}

func TestTheDeliveryClientNeverFollowsARedirect(t *testing.T) {
	var followed atomic.Int32
	mux := http.NewServeMux()
	mux.HandleFunc("/hook", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/elsewhere", http.StatusTemporaryRedirect)
	})
	mux.HandleFunc("/elsewhere", func(http.ResponseWriter, *http.Request) { followed.Add(1) })
	srv := httptest.NewServer(mux)
	defer srv.Close()
	resp, err := webhook.Policy{AllowLoopback: true}.Client(2*time.Second).Post(srv.URL+"/hook", "application/json", strings.NewReader("{}"))
	if err != nil || resp.StatusCode != http.StatusTemporaryRedirect || followed.Load() != 0 {
		t.Fatalf("redirect: %v %v, followed %d", resp, err, followed.Load())
	}
	resp.Body.Close()
}
