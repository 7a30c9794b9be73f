package shardline

import (
	"strings"
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatch"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awss3"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"
	"github.com/cdklabs/cdk-nag-go/cdknag/v2"

	"github.com/shardline/shardline/ops/onfailure"
)

// How the mappings of the table's stream (the counter's and the archive's)
// give a failing batch up; the Kinesis mapping's are Props (RetryAttempts,
// MaxRecordAge).
const (
	// StreamRetryAttempts bounds the retries of a failing batch, bisected
	// on every error: a batch that cannot succeed goes to the
	// FailedBatches bucket instead of stopping its shard.
	StreamRetryAttempts = 10
	// StreamMaxRecordAge gives up on records older than this: well inside
	// the 24 hours the table's stream keeps them, so that a stalled batch
	// is set aside, records included, before the stream trims it.
	StreamMaxRecordAge = 6 * time.Hour
)

// Retention of the FailedBatches bucket.
const (
	// MinFailedBatchRetentionDays is DESIGN.md's promise: what was given
	// up on stays recoverable for at least 7 days.
	MinFailedBatchRetentionDays = 7
	// DefaultFailedBatchRetentionDays leaves a week's margin over it.
	DefaultFailedBatchRetentionDays = 14
)

// failedBatches declares the bucket every event source mapping sends the
// batches it gives up on to, records included (Lambda's S3 on-failure
// destination): encrypted, private, TLS-only, each object kept
// FailedBatchRetentionDays, then expired. `shardline redrive` reads and
// deletes them; the functions may only add to it.
func (pl *Pipeline) failedBatches(c constructs.Construct, p Props) {
	pl.FailedBatches = awss3.NewBucket(c, jsii.String("FailedBatches"), &awss3.BucketProps{
		Encryption:        awss3.BucketEncryption_S3_MANAGED,
		BlockPublicAccess: awss3.BlockPublicAccess_BLOCK_ALL(),
		EnforceSSL:        jsii.Bool(true),
		MinimumTLSVersion: jsii.Number(1.2),
		ObjectOwnership:   awss3.ObjectOwnership_BUCKET_OWNER_ENFORCED,
		LifecycleRules: &[]*awss3.LifecycleRule{{
			Id:                                  jsii.String("expire-failed-batches"),
			Expiration:                          awscdk.Duration_Days(jsii.Number(float64(p.FailedBatchRetentionDays))),
			AbortIncompleteMultipartUploadAfter: awscdk.Duration_Days(jsii.Number(1)),
		}},
		// The records are the only copy of what was given up on: deleting
		// the stack leaves them, as it leaves the table.
		RemovalPolicy: awscdk.RemovalPolicy_RETAIN,
	})
	cdknag.NagSuppressions_AddResourceSuppressions(pl.FailedBatches, &[]*cdknag.NagPackSuppression{{
		Id: jsii.String("AwsSolutions-S1"),
		Reason: jsii.String("Only Lambda's event source mappings write this bucket (a few objects, when a batch is given up on), and only the operator's " +
			"`shardline redrive` reads and deletes them; the alarms and the command's report say what came and went. Access logs would need a bucket of their own, " +
			"whose access would need another."),
	}}, jsii.Bool(false))
	stack := awscdk.Stack_Of(c)
	awscdk.NewCfnOutput(stack, jsii.String("FailedBatchesBucket"), &awscdk.CfnOutputProps{Value: pl.FailedBatches.BucketName(),
		Description: jsii.String("S3 bucket of the stream batches Lambda gave up on, records included (shardline redrive --bucket)")})
}

// confineGivenUp lets each function write on-failure objects only under its
// own mapping's id (Lambda's keys are aws/lambda/<mapping id>/...), by a
// Deny in the bucket's policy: `shardline redrive` runs an object's
// records through the code of the mapping its key names, so one function
// must not be able to pass its records to another's code (the archive's
// role, which may not write the table, to the ingest code). The ids are
// outputs, for the command. The bucket policy is a resource of its own,
// which nothing the mappings need depends on.
func (pl *Pipeline) confineGivenUp(c constructs.Construct) {
	stack := awscdk.Stack_Of(c)
	// One statement a function: the ingest function reads the shared
	// stream and each tenant's, and a Deny a mapping would, together,
	// deny it every key.
	var fns []*givenUp
	own := map[awslambda.Function][]*string{}
	for i := range pl.givenUp {
		g := &pl.givenUp[i]
		if own[g.fn] == nil {
			fns = append(fns, g)
		}
		own[g.fn] = append(own[g.fn], awscdk.Fn_Join(jsii.String(""), &[]*string{pl.FailedBatches.BucketArn(), jsii.String("/" + onfailure.Prefix), g.mapping, jsii.String("/*")}))
		what := "the " + strings.ToLower(g.name) + " function's event source mapping: shardline redrive --" + strings.ToLower(g.name) + "-mapping"
		if g.tenant {
			what = "the ingest function's event source mapping from a tenant's stream: shardline redrive --ingest-mapping, a run for each mapping"
		}
		awscdk.NewCfnOutput(stack, jsii.String(g.name+"MappingId"), &awscdk.CfnOutputProps{Value: g.mapping, Description: jsii.String(what)})
	}
	for _, g := range fns {
		sid := "Only" + g.name + "UnderItsMapping"
		if len(own[g.fn]) > 1 {
			sid = "Only" + g.name + "UnderItsMappings"
		}
		mine := own[g.fn]
		pl.FailedBatches.AddToResourcePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
			Sid:          jsii.String(sid),
			Effect:       awsiam.Effect_DENY,
			Principals:   &[]awsiam.IPrincipal{awsiam.NewAnyPrincipal()},
			Actions:      jsii.Strings("s3:PutObject"),
			NotResources: &mine,
			Conditions:   &map[string]interface{}{"ArnEquals": map[string]interface{}{"aws:PrincipalArn": g.fn.Role().RoleArn()}},
		}))
	}
}

// onFailure is a mapping's on-failure destination: the FailedBatches
// bucket.
func (pl *Pipeline) onFailure() awslambda.IEventSourceDlq {
	return &s3Destination{bucket: pl.FailedBatches}
}

// s3Destination is CDK's S3OnFailureDestination with least privilege:
// that one grants the function read, write and delete on the whole bucket,
// where Lambda needs only to list the bucket and put objects under
// aws/lambda/ (with the function's role).
type s3Destination struct{ bucket awss3.IBucket }

// Bind grants fn what the destination needs and names the bucket.
func (d *s3Destination) Bind(_ awslambda.IEventSourceMapping, fn awslambda.IFunction) *awslambda.DlqDestinationConfig {
	fn.AddToRolePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Sid:       jsii.String("GiveUpBatches"),
		Actions:   jsii.Strings("s3:PutObject"),
		Resources: &[]*string{d.bucket.ArnForObjects(jsii.String(onfailure.Prefix + "*"))},
	}))
	fn.AddToRolePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Sid:       jsii.String("FindFailedBatchesBucket"),
		Actions:   jsii.Strings("s3:ListBucket"),
		Resources: &[]*string{d.bucket.BucketArn()},
	}))
	if role := fn.Role(); role != nil {
		cdknag.NagSuppressions_AddResourceSuppressions(role, &[]*cdknag.NagPackSuppression{{
			Id: jsii.String("AwsSolutions-IAM5"),
			Reason: jsii.String("Lambda names each on-failure object after the mapping, the shard and the time of the give-up: PutObject is limited to " +
				"the FailedBatches bucket's aws/lambda/ prefix, where Lambda writes (no read, list of objects' content, or delete)."),
			AppliesTo: &[]interface{}{&cdknag.RegexAppliesTo{Regex: jsii.String(`/^Resource::<.*FailedBatches.*\.Arn>\/aws\/lambda\/\*$/g`)}},
		}}, jsii.Bool(true))
	}
	return &awslambda.DlqDestinationConfig{Destination: d.bucket.BucketArn()}
}

// eventCount turns on the mapping metrics that tell of given-up batches
// (OnFailureDestinationDeliveredEventCount, DroppedEventCount).
func eventCount() *awslambda.MetricsConfig {
	return &awslambda.MetricsConfig{Metrics: &[]awslambda.MetricType{awslambda.MetricType_EVENT_COUNT}}
}

// givenUp is a mapping whose given-up batches are alarmed on.
type givenUp struct {
	name     string // Ingest, Counter, Archive, Tenant<id>Ingest
	id, what string
	fn       awslambda.Function
	mapping  *string // the mapping's UUID
	// tenant: a tenant's stream's mapping, whose dropped records have an
	// alarm of their own (givenUpAlarms).
	tenant bool
}

// watchGivenUp records that the mapping of fn, whose UUID is mapping,
// gives batches up to the bucket: alarms (givenUpAlarms) fire for it.
func (pl *Pipeline) watchGivenUp(name, what string, fn awslambda.Function, mapping *string) {
	pl.givenUp = append(pl.givenUp, givenUp{name: name, id: name + "GivenUpAlarm", what: what, fn: fn, mapping: mapping})
}

// givenUpAlarms fire within a minute or two of a batch given up on: one a
// mapping, on the mapping's OnFailureDestinationDeliveredEventCount (Lambda
// counts each record it sends to the destination, per minute, by mapping
// UUID); and one for records lost on the way, when Lambda could not write
// them to the bucket (the functions' DestinationDeliveryFailures) or
// dropped them without (the mappings' DroppedEventCount).
func (pl *Pipeline) givenUpAlarms(alarm func(id, what string, m awscloudwatch.IMetric, threshold int)) {
	minute := awscdk.Duration_Minutes(jsii.Number(1))
	lost := map[string]awscloudwatch.IMetric{}
	expr := ""
	i := 0
	for _, g := range pl.givenUp {
		esm := func(name string) awscloudwatch.Metric {
			return awscloudwatch.NewMetric(&awscloudwatch.MetricProps{
				Namespace: jsii.String("AWS/Lambda"), MetricName: jsii.String(name),
				DimensionsMap: &map[string]*string{"EventSourceMappingUUID": g.mapping},
				Statistic:     jsii.String("Sum"), Period: minute,
			})
		}
		alarm(g.id, g.what+": records are in the FailedBatches bucket; run shardline redrive", esm("OnFailureDestinationDeliveredEventCount"), 0)
		if g.tenant {
			// An alarm's expression takes at most 10 metrics: a tenant
			// stream's dropped records alarm alone. The ingest function's
			// DestinationDeliveryFailures, below, counts for every mapping
			// of it.
			alarm(g.name+"DroppedAlarm", g.what+" and dropped them without writing them to the FailedBatches bucket: those records are lost",
				esm("DroppedEventCount"), 0)
			continue
		}
		failures := g.fn.Metric(jsii.String("DestinationDeliveryFailures"), &awscloudwatch.MetricOptions{Statistic: jsii.String("Sum"), Period: minute})
		for j, m := range []awscloudwatch.IMetric{failures, esm("DroppedEventCount")} {
			key := string(rune('a'+i)) + string(rune('0'+j))
			lost[key] = m
			if expr != "" {
				expr += " + "
			}
			expr += "FILL(" + key + ", 0)"
		}
		i++
	}
	if len(lost) == 0 {
		return
	}
	alarm("FailedBatchesLostAlarm", "Lambda gave batches up and could not write them to the FailedBatches bucket, or dropped them: those records are lost",
		awscloudwatch.NewMathExpression(&awscloudwatch.MathExpressionProps{
			Expression: jsii.String(expr), UsingMetrics: &lost, Period: minute,
			Label: jsii.String("records given up on and not kept"),
		}), 0)
}
