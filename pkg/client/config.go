package client

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// Doer sends one HTTP request; *http.Client is one, and so is the SDK's
// buildable client (aws.Config.HTTPClient), which honours AWS_CA_BUNDLE.
type Doer interface {
	Do(*http.Request) (*http.Response, error)
}

// Config is what New needs. Only BaseURL is required.
type Config struct {
	// BaseURL is the API's root: "http://127.0.0.1:8080" locally, the
	// stack's ApiUrl output in AWS. A path (a named stage) is kept.
	BaseURL string
	// Auth adds credentials to each request: BearerToken(...) or SigV4{...}.
	// Nil sends none (the API answers 401 unauthorized).
	Auth Authorizer
	// HTTP sends the requests; nil is an http.Client that follows no
	// redirects (a signed request or a token goes to BaseURL only).
	HTTP Doer
	// UserAgent names the caller; "aijobs-go-client" when empty.
	UserAgent string

	// MaxRetries is how many times a request is retried after a network
	// error, a 429 or a 5xx: 0 means 3, negative means never.
	MaxRetries int
	// RetryBase is the first retry's wait when the answer gives no
	// Retry-After (doubling per retry); 0 means 500 ms.
	RetryBase time.Duration
	// MaxRetryWait caps one retry's wait, Retry-After included; 0 means 30 s.
	MaxRetryWait time.Duration
	// AttemptTimeout bounds one try of a request (API Gateway gives up
	// after 30 s anyway); 0 means 35 s.
	AttemptTimeout time.Duration

	// PollMin and PollMax bound Wait's interval between polls; 0 means
	// 1 s and 30 s (the server's own Retry-After never exceeds 30 s).
	PollMin, PollMax time.Duration

	// Now is the clock (signing time, HTTP-date Retry-After); nil means
	// time.Now.
	Now func() time.Time
	// Sleep waits d or until ctx ends; nil means a timer. Tests replace it
	// to run retries and polls without waiting.
	Sleep func(ctx context.Context, d time.Duration) error
}

// Client calls the aijobs API. It is safe for concurrent use.
type Client struct {
	base           string // scheme://host[/path], no trailing slash
	auth           Authorizer
	http           Doer
	userAgent      string
	maxRetries     int
	retryBase      time.Duration
	maxRetryWait   time.Duration
	attemptTimeout time.Duration
	pollMin        time.Duration
	pollMax        time.Duration
	now            func() time.Time
	sleep          func(context.Context, time.Duration) error
}

// New checks cfg and fills its defaults.
func New(cfg Config) (*Client, error) {
	base, err := parseBase(cfg.BaseURL)
	if err != nil {
		return nil, err
	}
	if v, ok := cfg.Auth.(interface{ validate() error }); ok {
		if err := v.validate(); err != nil {
			return nil, fmt.Errorf("client: %w", err)
		}
	}
	c := &Client{
		base: base, auth: cfg.Auth, http: cfg.HTTP, userAgent: cfg.UserAgent,
		maxRetries: cfg.MaxRetries, retryBase: cfg.RetryBase, maxRetryWait: cfg.MaxRetryWait,
		attemptTimeout: cfg.AttemptTimeout, pollMin: cfg.PollMin, pollMax: cfg.PollMax,
		now: cfg.Now, sleep: cfg.Sleep,
	}
	if c.http == nil {
		// The same policy as model.NoRedirects, written here once more on
		// purpose: the public client imports only the wire (pkg/api) and
		// the domain (pkg/job), never the server's provider seam.
		c.http = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	}
	if c.userAgent == "" {
		c.userAgent = "aijobs-go-client"
	}
	switch {
	case c.maxRetries == 0:
		c.maxRetries = 3
	case c.maxRetries < 0:
		c.maxRetries = 0
	}
	c.retryBase = orDefault(c.retryBase, 500*time.Millisecond)
	c.maxRetryWait = orDefault(c.maxRetryWait, 30*time.Second)
	c.attemptTimeout = orDefault(c.attemptTimeout, 35*time.Second)
	c.pollMin = orDefault(c.pollMin, time.Second)
	c.pollMax = orDefault(c.pollMax, 30*time.Second)
	if c.pollMax < c.pollMin {
		return nil, fmt.Errorf("client: PollMax %s is below PollMin %s", c.pollMax, c.pollMin)
	}
	if c.now == nil {
		c.now = time.Now
	}
	if c.sleep == nil {
		c.sleep = sleep
	}
	return c, nil
}

func orDefault(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}

// parseBase accepts an http(s) URL with a host and no query or fragment.
func parseBase(s string) (string, error) {
	if s == "" {
		return "", errors.New("client: BaseURL is required")
	}
	u, err := url.Parse(s)
	if err != nil {
		return "", fmt.Errorf("client: BaseURL: %w", err)
	}
	switch {
	case u.Scheme != "http" && u.Scheme != "https":
		return "", fmt.Errorf("client: BaseURL %q: the scheme must be http or https", s)
	case u.Host == "":
		return "", fmt.Errorf("client: BaseURL %q has no host", s)
	case u.User != nil:
		return "", errors.New("client: BaseURL must not carry credentials; use Auth")
	case u.RawQuery != "" || u.Fragment != "":
		return "", fmt.Errorf("client: BaseURL %q must not have a query or fragment", s)
	}
	return strings.TrimRight(u.Scheme+"://"+u.Host+u.EscapedPath(), "/"), nil
}

// sleep waits d, or less if ctx ends first.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
