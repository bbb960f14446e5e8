package api

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/aws/aws-lambda-go/events"
)

// maxTenantBytes bounds a tenant (with its namespace). The tenant is the
// tenant index's partition key, which DynamoDB caps at 2048 bytes; a longer
// identity (a Lambda authorizer passing on what a caller sent, an IdP with
// long subjects) is refused as unusable before any store call, instead of
// failing the write as too large or the list as unavailable.
const maxTenantBytes = 1024

// displayable reports whether a tenant can be shown as it is. The tenant
// is stored on every record and reaches operators' terminals (the CLI's
// tables) and pages, and whatever an authorizer passes on is taken: a
// Lambda authorizer's "tenant" may be what a caller sent. Refused are
// invalid UTF-8 (a terminal may read its bytes as C1 controls), category
// Cc (C0, DEL and C1: an escape sequence rewrites the screen or the
// window title), Cf (bidi overrides and isolates reorder what is shown,
// zero-width characters make two tenants look alike) and Zl and Zp (line
// breaks). Spaces, letters, marks, symbols and private-use characters
// pass: an IdP may use them, and they change no more than the glyphs.
func displayable(tenant string) bool {
	if !utf8.ValidString(tenant) {
		return false
	}
	return !strings.ContainsFunc(tenant, func(r rune) bool {
		return unicode.In(r, unicode.Cc, unicode.Cf, unicode.Zl, unicode.Zp)
	})
}

// tenantOf is the caller's tenant from the authorizer context, "" if none:
// the JWT subject, else a Lambda authorizer's "tenant" key, else the IAM
// principal (iamTenant). Each is namespaced by its source ("jwt:",
// "lambda:", "iam:"), so a JWT whose subject looks like an IAM identity can
// never be that IAM principal's tenant. The local dev server fills the JWT
// subject from "Authorization: Bearer <tenant>", so isolation is exercised
// locally by the same code.
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
		return iamTenant(a.IAM)
	}
	return ""
}

// iamTenant is an IAM caller's tenant: the persistent principal, never the
// session (docs/decisions.md, "Tenant identity"). IAM's
// aws:userid is "<role unique id>:<session name>" for an assumed role,
// the unique id for a user, the account for root and
// "<account>:<name>" for a federated user
// (https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_policies_variables.html#principaltable);
// the role's unique id (AROA...) is kept and the session name dropped, so
// credentials refreshed under a new session name are the same tenant and
// a retried create with the same Idempotency-Key finds the same job. A
// role deleted and recreated under the same name gets a new unique id
// (https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_identifiers.html#identifiers-unique-ids),
// so it is another tenant: it never sees its namesake's jobs. A Cognito
// identity pool hands one role to every app user, so there the identity
// is the Cognito identity id instead.
func iamTenant(iam *events.APIGatewayV2HTTPRequestContextAuthorizerIAMDescription) string {
	if id := iam.CognitoIdentity.IdentityID; id != "" {
		return "iam:cognito:" + id
	}
	principal := iam.UserID
	if principal == "" {
		principal = iam.CallerID
	}
	if principal == "" || iam.AccountID == "" {
		return ""
	}
	if role, _, session := strings.Cut(principal, ":"); session && strings.HasPrefix(role, "AROA") {
		principal = role
	}
	return "iam:" + iam.AccountID + ":" + principal
}
