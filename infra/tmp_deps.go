package main

import (
	_ "github.com/aijobs/aijobs/pkg/settings"
	_ "github.com/aws/aws-cdk-go/awscdk/v2"
	_ "github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	_ "github.com/aws/aws-cdk-go/awscdk/v2/awsapigatewayv2"
	_ "github.com/aws/aws-cdk-go/awscdk/v2/awsapigatewayv2authorizers"
	_ "github.com/aws/aws-cdk-go/awscdk/v2/awsapigatewayv2integrations"
	_ "github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatch"
	_ "github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatchactions"
	_ "github.com/aws/aws-cdk-go/awscdk/v2/awsdynamodb"
	_ "github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	_ "github.com/aws/aws-cdk-go/awscdk/v2/awskms"
	_ "github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	_ "github.com/aws/aws-cdk-go/awscdk/v2/awslambdaeventsources"
	_ "github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
	_ "github.com/aws/aws-cdk-go/awscdk/v2/awssns"
	_ "github.com/aws/aws-cdk-go/awscdk/v2/awssnssubscriptions"
	_ "github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	_ "github.com/aws/constructs-go/constructs/v10"
	_ "github.com/aws/jsii-runtime-go"
	_ "github.com/cdklabs/cdk-nag-go/cdknag/v2"
)

func main() {}
