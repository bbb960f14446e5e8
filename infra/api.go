package main

import (
	"encoding/json"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsapigatewayv2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsapigatewayv2authorizers"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsapigatewayv2integrations"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
	"github.com/aws/jsii-runtime-go"
)

// API is the HTTP API and its one stage.
type API struct {
	HTTP   awsapigatewayv2.HttpApi
	Stage  awsapigatewayv2.HttpStage
	Access awslogs.LogGroup
}

// accessLogFormat is one JSON object per request: enough to follow a
// request to the function's logs (requestId) and to see who called (the
// IAM caller or the JWT subject is the tenant).
var accessLogFormat = map[string]string{
	"requestId":        "$context.requestId",
	"time":             "$context.requestTime",
	"ip":               "$context.identity.sourceIp",
	"method":           "$context.httpMethod",
	"path":             "$context.path",
	"routeKey":         "$context.routeKey",
	"status":           "$context.status",
	"protocol":         "$context.protocol",
	"responseLength":   "$context.responseLength",
	"latencyMs":        "$context.responseLatency",
	"integrationError": "$context.integrationErrorMessage",
	"authError":        "$context.authorizer.error",
	"caller":           "$context.identity.caller",
	"jwtSubject":       "$context.authorizer.claims.sub",
}

// newAPI is the HTTP API in front of the API function. Every route,
// $default included, needs a signed (IAM) or JWT-authenticated caller: the
// caller is the tenant, so an anonymous request has nothing to act for.
// $default sends unknown paths and methods to the function too, so they
// answer problem+json like every other error (docs/errors.md, "HTTP problems").
func newAPI(stack awscdk.Stack, cfg Config, fn awslambda.Function) API {
	var authorizer awsapigatewayv2.IHttpRouteAuthorizer = awsapigatewayv2authorizers.NewHttpIamAuthorizer()
	if cfg.JWTIssuer != "" {
		authorizer = awsapigatewayv2authorizers.NewHttpJwtAuthorizer(jsii.String("Jwt"), jsii.String(cfg.JWTIssuer),
			&awsapigatewayv2authorizers.HttpJwtAuthorizerProps{JwtAudience: jsii.Strings(cfg.JWTAudience...)})
	}
	// One permission for the whole API instead of one per route.
	integration := awsapigatewayv2integrations.NewHttpLambdaIntegration(jsii.String("ApiFunction"), fn,
		&awsapigatewayv2integrations.HttpLambdaIntegrationProps{ScopePermissionToRoute: jsii.Bool(false)})
	api := awsapigatewayv2.NewHttpApi(stack, jsii.String("HttpApi"), &awsapigatewayv2.HttpApiProps{
		ApiName:            jsii.String(cfg.Settings.Prefix),
		Description:        jsii.String("aijobs: background AI model jobs"),
		DefaultAuthorizer:  authorizer,
		DefaultIntegration: integration,
		CreateDefaultStage: jsii.Bool(false),
	})
	// The integration's one permission has SourceArn <api>/*/*/*, which
	// matches <api>/<stage>/<method>/<path> but not the $default route's
	// <api>/<stage>/$default (aws/serverless-application-model#1860):
	// without this one, every unknown path would be API Gateway's 500
	// instead of the function's problem+json.
	fn.AddPermission(jsii.String("DefaultRouteInvoke"), &awslambda.Permission{
		Principal: awsiam.NewServicePrincipal(jsii.String("apigateway.amazonaws.com"), nil),
		SourceArn: stack.FormatArn(&awscdk.ArnComponents{
			Service: jsii.String("execute-api"), Resource: api.ApiId(), ResourceName: jsii.String("*/$default"),
		}),
	})
	routes := []struct {
		path   string
		method awsapigatewayv2.HttpMethod
	}{
		{"/jobs", awsapigatewayv2.HttpMethod_POST},
		{"/jobs", awsapigatewayv2.HttpMethod_GET}, // the caller's own jobs (the tenant index)
		{"/jobs/{id}", awsapigatewayv2.HttpMethod_GET},
		{"/jobs/{id}/cancel", awsapigatewayv2.HttpMethod_POST},
		{"/uploads", awsapigatewayv2.HttpMethod_POST},            // a presigned PUT for a large input (docs/payloads.md)
		{"/webhook-key", awsapigatewayv2.HttpMethod_GET},         // the caller's signing key
		{"/webhook-key/rotate", awsapigatewayv2.HttpMethod_POST}, // a new key, the old one verifying for the overlap
		{"/spend", awsapigatewayv2.HttpMethod_GET},               // the caller's spend against its limits
		{"/quotes", awsapigatewayv2.HttpMethod_POST},             // a job's cost and whether the caller's limits cover it, nothing recorded
	}
	for _, r := range routes {
		api.AddRoutes(&awsapigatewayv2.AddRoutesOptions{
			Path: jsii.String(r.path), Methods: &[]awsapigatewayv2.HttpMethod{r.method}, Integration: integration,
		})
	}

	access := awslogs.NewLogGroup(stack, jsii.String("ApiAccessLogs"), &awslogs.LogGroupProps{
		Retention:     cfg.LogRetention,
		RemovalPolicy: removalPolicy(cfg),
	})
	// The stage is built here rather than by HttpApi so it gets throttling
	// and access logs; "$default" serves the API at its root URL.
	stage := awsapigatewayv2.NewHttpStage(stack, jsii.String("DefaultStage"), &awsapigatewayv2.HttpStageProps{
		HttpApi:    api,
		StageName:  jsii.String("$default"),
		AutoDeploy: jsii.Bool(true),
		Throttle: &awsapigatewayv2.ThrottleSettings{
			RateLimit:  jsii.Number(cfg.ThrottleRate),
			BurstLimit: jsii.Number(cfg.ThrottleBurst),
		},
	})
	format, _ := json.Marshal(accessLogFormat)
	stage.Node().DefaultChild().(awsapigatewayv2.CfnStage).SetAccessLogSettings(&awsapigatewayv2.CfnStage_AccessLogSettingsProperty{
		DestinationArn: access.LogGroupArn(),
		Format:         jsii.String(string(format)),
	})
	return API{HTTP: api, Stage: stage, Access: access}
}
