package advise

import (
	"fmt"
	"strings"
	"time"
)

// Hop is one timeout on the request path: a gateway or load balancer that
// cuts a request still running when its timeout passes, whatever the
// function behind it is still doing.
type Hop struct {
	Name    string
	Timeout time.Duration
}

// The hops operators meet most. The API Gateway figures are hard limits of
// the integration (REST APIs may raise theirs by quota request, HTTP APIs
// may not); the ALB figure is its default idle timeout, which is
// configurable: give the configured value as an explicit duration.
var (
	APIGatewayREST = Hop{Name: "API Gateway REST API", Timeout: 29 * time.Second}
	APIGatewayHTTP = Hop{Name: "API Gateway HTTP API", Timeout: 30 * time.Second}
	ALB            = Hop{Name: "Application Load Balancer (default idle timeout)", Timeout: 60 * time.Second}
)

// ParseHop reads a hop as the CLI takes it: "rest", "http", "alb", or a Go
// duration ("45s") for any other hop. The duration must be positive.
func ParseHop(s string) (Hop, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "rest":
		return APIGatewayREST, nil
	case "http":
		return APIGatewayHTTP, nil
	case "alb":
		return ALB, nil
	}
	d, err := time.ParseDuration(strings.TrimSpace(s))
	if err != nil {
		return Hop{}, fmt.Errorf("hop %q: want rest, http, alb or a duration such as 45s", s)
	}
	if d <= 0 {
		return Hop{}, fmt.Errorf("hop %q: the timeout must be positive", s)
	}
	return Hop{Name: "a hop of " + d.String(), Timeout: d}, nil
}
