package api

import "github.com/aws/aws-lambda-go/events"

// maxTenantBytes bounds a tenant (with its namespace). The tenant is the
// tenant index's partition key, which DynamoDB caps at 2048 bytes; a longer
// identity (a Lambda authorizer passing on what a caller sent, an IdP with
// long subjects) is refused as unusable before any store call, instead of
// failing the write as too large or the list as unavailable.
const maxTenantBytes = 1024

// tenantOf is the caller's tenant from the authorizer context, "" if none:
// the JWT subject, else a Lambda authorizer's "tenant" key, else the IAM
// caller (its ARN, or account and caller id). Each is namespaced by its
// source ("jwt:", "lambda:", "iam:"), so a JWT whose subject looks like an
// IAM ARN can never be that IAM principal's tenant. The local dev server
// fills the JWT subject from "Authorization: Bearer <tenant>", so isolation
// is exercised locally by the same code.
func tenantOf(rc events.APIGatewayV2HTTPRequestContext) string {
	a := rc.Authorizer
	if a == nil {
		return ""
	}
	if a.JWT != nil {
		if sub := a.JWT.Claims["sub"]; sub != "" {
			return "jwt:" + sub
		}
	}
	if t, ok := a.Lambda["tenant"].(string); ok && t != "" {
		return "lambda:" + t
	}
	if a.IAM != nil {
		if a.IAM.UserARN != "" {
			return "iam:" + a.IAM.UserARN
		}
		if a.IAM.AccountID != "" && a.IAM.CallerID != "" {
			return "iam:" + a.IAM.AccountID + ":" + a.IAM.CallerID
		}
	}
	return ""
}
