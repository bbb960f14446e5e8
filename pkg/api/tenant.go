package api

import "github.com/aws/aws-lambda-go/events"

// tenantOf is the caller's identity from the authorizer context: the JWT
// subject, a Lambda authorizer's "tenant", or the IAM principal. The local
// dev server fills the JWT claim from its bearer token, so the same code
// decides isolation everywhere. Empty means unauthenticated.
func tenantOf(ev events.APIGatewayV2HTTPRequest) string {
	a := ev.RequestContext.Authorizer
	if a == nil {
		return ""
	}
	if a.JWT != nil && a.JWT.Claims["sub"] != "" {
		return "jwt:" + a.JWT.Claims["sub"]
	}
	if t, ok := a.Lambda["tenant"].(string); ok && t != "" {
		return "lambda:" + t
	}
	if a.IAM != nil {
		if a.IAM.UserARN != "" {
			return "iam:" + a.IAM.UserARN
		}
		if a.IAM.CallerID != "" {
			return "iam:" + a.IAM.AccountID + ":" + a.IAM.CallerID
		}
	}
	return ""
}
