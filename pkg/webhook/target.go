package webhook

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"syscall"
	"time"
)

// MaxURLBytes bounds a callback URL: it is stored on every job that has one.
const MaxURLBytes = 2048

// ErrTarget is why a callback URL is refused. Its message is safe to show
// the caller (it quotes neither the URL nor what it resolved to).
type ErrTarget struct{ Reason string }

func (e *ErrTarget) Error() string { return "webhook: callback URL refused: " + e.Reason }

func refused(format string, a ...any) error { return &ErrTarget{Reason: fmt.Sprintf(format, a...)} }

// Resolver looks host names up; *net.Resolver is one.
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// Policy says which targets a deployment may call. The zero value is the
// production policy: https only, public addresses only.
type Policy struct {
	// AllowLoopback admits loopback targets, over http or https: the dev
	// server's receivers run on 127.0.0.1. Private, link-local and
	// metadata addresses stay refused.
	AllowLoopback bool
}

// nonPublic are the IPv4 and IPv6 ranges a callback may never reach besides
// what netip classifies (private, loopback, link-local, multicast,
// unspecified): shared address space, "this network", IETF protocol
// assignments, benchmarking, documentation, reserved, broadcast, and the
// NAT64 prefixes, which can embed any of them.
var nonPublic = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),
	netip.MustParsePrefix("100.64.0.0/10"),
	netip.MustParsePrefix("192.0.0.0/24"),
	netip.MustParsePrefix("192.0.2.0/24"),
	netip.MustParsePrefix("198.18.0.0/15"),
	netip.MustParsePrefix("198.51.100.0/24"),
	netip.MustParsePrefix("203.0.113.0/24"),
	netip.MustParsePrefix("240.0.0.0/4"),
	netip.MustParsePrefix("2001:db8::/32"),
	netip.MustParsePrefix("3fff::/20"),
	netip.MustParsePrefix("64:ff9b::/96"),
	netip.MustParsePrefix("64:ff9b:1::/48"),
}

// deprecatedIPv6 are IPv6 forms no callback receiver uses and that carry
// an IPv4 address, or a scope, netip does not classify: site-local
// (fec0::/10, deprecated by RFC 3879), IPv4-compatible (::/96, deprecated
// by RFC 4291: ::7f00:1 is 127.0.0.1), SIIT's IPv4-translated
// (::ffff:0:0:0/96, RFC 2765) and Teredo (2001::/32, RFC 4380: a NAT
// traversal client's address, its server and client IPv4 inside, never a
// server's). They are refused whole; a relay or a host that still routes
// them would reach the embedded address.
var deprecatedIPv6 = []netip.Prefix{
	netip.MustParsePrefix("fec0::/10"),
	netip.MustParsePrefix("::/96"),
	netip.MustParsePrefix("::ffff:0:0:0/96"),
	netip.MustParsePrefix("2001::/32"),
}

// sixToFour is 6to4 (RFC 3056): 2002:AABB:CCDD::/48 is the IPv4 address
// AA.BB.CC.DD's network, reached through a relay that unwraps it.
var sixToFour = netip.MustParsePrefix("2002::/16")

// Allows reports whether a callback may connect to addr. Instance metadata
// (169.254.169.254, fd00:ec2::254) is link-local or private, so it is
// always refused. A 6to4 address is judged by the IPv4 address it embeds,
// which must be public (loopback too is refused there: no relay delivers
// to the dev machine's own loopback).
func (p Policy) Allows(addr netip.Addr) bool {
	addr = addr.Unmap()
	if sixToFour.Contains(addr) {
		b := addr.As16()
		return Policy{}.Allows(netip.AddrFrom4([4]byte{b[2], b[3], b[4], b[5]}))
	}
	for _, n := range deprecatedIPv6 {
		if n.Contains(addr) && !addr.IsLoopback() {
			return false
		}
	}
	switch {
	case !addr.IsValid():
		return false
	case addr.IsLoopback():
		return p.AllowLoopback
	case addr.IsPrivate(), addr.IsLinkLocalUnicast(), addr.IsLinkLocalMulticast(), addr.IsInterfaceLocalMulticast(),
		addr.IsMulticast(), addr.IsUnspecified(), addr == netip.AddrFrom4([4]byte{255, 255, 255, 255}):
		return false
	}
	for _, n := range nonPublic {
		if n.Contains(addr) {
			return false
		}
	}
	return true
}

// Check refuses a callback URL that is not an absolute https URL (http too
// for loopback under AllowLoopback) without credentials, or whose host
// resolves to any address the policy refuses. It runs at create; the
// dialer of Client checks again at every delivery, because a name can
// resolve elsewhere by then (DNS rebinding).
func (p Policy) Check(ctx context.Context, r Resolver, raw string) error {
	u, err := ParseTarget(raw)
	if err != nil {
		return err
	}
	host := u.Hostname()
	addrs, err := p.resolve(ctx, r, host)
	if err != nil {
		return err
	}
	loopback := true
	for _, a := range addrs {
		if !p.Allows(a) {
			return refused("the host resolves to a private, loopback, link-local or reserved address")
		}
		loopback = loopback && a.Unmap().IsLoopback()
	}
	switch u.Scheme {
	case "https":
	case "http":
		if !loopback {
			return refused("the scheme must be https")
		}
	default:
		return refused("the scheme must be https")
	}
	return nil
}

// ParseTarget checks what can be checked of a callback URL without
// resolving it: an absolute http or https URL of at most MaxURLBytes with a
// host, no credentials and no fragment. Policy.Check says whether it may
// be called.
func ParseTarget(raw string) (*url.URL, error) {
	if len(raw) > MaxURLBytes {
		return nil, refused("longer than %d bytes", MaxURLBytes)
	}
	u, err := url.Parse(raw)
	if err != nil || !u.IsAbs() || u.Host == "" || u.Opaque != "" || (u.Scheme != "https" && u.Scheme != "http") {
		return nil, refused("not an absolute https URL")
	}
	if u.User != nil {
		return nil, refused("credentials in the URL")
	}
	if u.Fragment != "" {
		return nil, refused("a fragment is never sent")
	}
	return u, nil
}

func (p Policy) resolve(ctx context.Context, r Resolver, host string) ([]netip.Addr, error) {
	if a, err := netip.ParseAddr(host); err == nil {
		return []netip.Addr{a}, nil
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	addrs, err := r.LookupNetIP(ctx, "ip", host)
	if err != nil || len(addrs) == 0 {
		return nil, refused("the host does not resolve")
	}
	return addrs, nil
}

// errDialRefused marks a connection the dialer refused: the name now
// resolves to an address the policy refuses.
var errDialRefused = errors.New("webhook: the target resolves to a refused address")

// IsRefusedTarget reports whether a delivery failed because the target's
// address is refused: no retry can succeed unless its DNS changes back.
func IsRefusedTarget(err error) bool { return errors.Is(err, errDialRefused) }

// Client returns the HTTP client deliveries use: it never follows a
// redirect (a 3xx is a failed delivery, as Standard Webhooks says), uses no
// proxy from the environment, gives up after timeout, and checks the
// address every connection really dials against the policy.
func (p Policy) Client(timeout time.Duration) *http.Client {
	d := &net.Dialer{
		Timeout: timeout,
		Control: func(_, address string, _ syscall.RawConn) error {
			ap, err := netip.ParseAddrPort(address)
			if err != nil || !p.Allows(ap.Addr()) {
				return errDialRefused
			}
			return nil
		},
	}
	return &http.Client{
		Timeout: timeout,
		Transport: &http.Transport{
			DialContext:           d.DialContext,
			TLSHandshakeTimeout:   timeout,
			ResponseHeaderTimeout: timeout,
			MaxIdleConnsPerHost:   2,
			IdleConnTimeout:       30 * time.Second,
			ForceAttemptHTTP2:     true,
		},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// Checker is a Policy with the resolver it checks names with: what the
// API asks at create.
type Checker struct {
	Policy   Policy
	Resolver Resolver // nil: net.DefaultResolver
}

// Check applies c.Policy to raw, resolving its host with c.Resolver.
func (c Checker) Check(ctx context.Context, raw string) error {
	var r Resolver = net.DefaultResolver
	if c.Resolver != nil {
		r = c.Resolver
	}
	return c.Policy.Check(ctx, r, raw)
}
