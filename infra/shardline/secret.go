package shardline

import (
	"github.com/aws/aws-cdk-go/awscdk/v2/awssecretsmanager"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"
	"github.com/cdklabs/cdk-nag-go/cdknag/v2"
)

// cursorSecret declares the key that signs the query API's cursors: 64
// random letters and digits that CloudFormation generates, so that no one
// knows them who cannot read the secret. The query function's environment
// holds only the secret's ARN; the function reads the value at cold start.
func (pl *Pipeline) cursorSecret(c constructs.Construct) {
	pl.CursorSecret = awssecretsmanager.NewSecret(c, jsii.String("CursorSecret"), &awssecretsmanager.SecretProps{
		Description: jsii.String("shardline: the HMAC key of the query API's cursors (generated; read by the query function at cold start)"),
		GenerateSecretString: &awssecretsmanager.SecretStringGenerator{
			PasswordLength:     jsii.Number(64),
			ExcludePunctuation: jsii.Bool(true),
		},
	})
	cdknag.NagSuppressions_AddResourceSuppressions(pl.CursorSecret, &[]*cdknag.NagPackSuppression{{
		Id: jsii.String("AwsSolutions-SMG4"),
		Reason: jsii.String("The secret is the HMAC key of the query API's cursors, paging tokens that only move a position inside a query " +
			"the caller may already make. Rotation would protect nothing a rotation schedule is for and would break paging: each query " +
			"container reads the key once, at cold start, so after a rotation warm and cold containers would refuse each other's cursors. " +
			"If the key leaks, replace it by hand (put-secret-value, then any function configuration change to recycle the containers): " +
			"cursors in flight answer 400 and clients start their paging again."),
	}}, jsii.Bool(false))
}
