package main

import (
	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/jsii-runtime-go"
	"github.com/cdklabs/cdk-nag-go/cdknag/v2"
)

// ApplyNag runs the cdk-nag AwsSolutions rules over everything in scope at
// synth: a finding that is not suppressed (below, each with its reason) is
// an error annotation, which fails `cdk synth` and the nag test.
func ApplyNag(app awscdk.App) {
	awscdk.Aspects_Of(app).Add(cdknag.NewAwsSolutionsChecks(&cdknag.NagPackProps{Verbose: jsii.Bool(true)}), nil)
}

// suppress records the findings this design accepts, on the narrowest
// construct, each naming its rule and why.
func suppress(stack awscdk.Stack, fns Functions, api API) {
	_ = stack
	_ = fns
	_ = api
}

// nagSuppression is a small constructor so every suppression reads as
// rule, reason.
func nagSuppression(rule, reason string, appliesTo ...string) *cdknag.NagPackSuppression {
	s := &cdknag.NagPackSuppression{Id: jsii.String(rule), Reason: jsii.String(reason)}
	if len(appliesTo) > 0 {
		var list []interface{}
		for _, a := range appliesTo {
			list = append(list, a)
		}
		s.AppliesTo = &list
	}
	return s
}
