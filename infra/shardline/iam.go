package shardline

import (
	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/jsii-runtime-go"
	"github.com/cdklabs/cdk-nag-go/cdknag/v2"

	"github.com/shardline/shardline/internal/schema"
)

// grants gives each function least privilege. The ingest function writes
// events and quarantined records (key spaces "E#" and "Q#") and reads and
// writes the shard records ("M#") it needs to place them; nothing else. The
// query function only reads: the table and its one index, and the cursor
// secret.
func (pl *Pipeline) grants(p Props) {
	pl.ingestGrants()
	pl.queryGrants(p)
	fns := []awslambda.Function{pl.Ingest, pl.Query, pl.Counter, pl.CountFold}
	if pl.Archive != nil {
		fns = append(fns, pl.Archive)
	}
	for _, fn := range fns {
		cdknag.NagSuppressions_AddResourceSuppressions(fn.Role(), &[]*cdknag.NagPackSuppression{{
			Id:        jsii.String("AwsSolutions-IAM5"),
			Reason:    jsii.String("X-Ray's PutTraceSegments and PutTelemetryRecords (added by active tracing) do not support resource-level permissions; every other statement names its resource."),
			AppliesTo: &[]interface{}{"Resource::*"},
		}}, jsii.Bool(true))
	}
}

// leadingKeys limits a statement to partition keys that match prefixes.
func leadingKeys(prefixes ...string) *map[string]interface{} {
	return &map[string]interface{}{
		"ForAllValues:StringLike": map[string]interface{}{"dynamodb:LeadingKeys": prefixes},
	}
}

func (pl *Pipeline) ingestGrants() {
	// IAM authorizes a BatchWriteItem as one action whether its requests
	// put or delete, and no DynamoDB condition key tells them apart
	// (dynamodb:EnclosingOperation covers only the transaction APIs), so
	// this grant also lets the role delete events and quarantined records.
	// Denying that would mean writing one PutItem per event (25 times the
	// requests) or TransactWriteItems (twice the write units), and protect
	// little: a PutRequest can overwrite any of these items anyway. What
	// guards the data from this role is the key-space limit, point-in-time
	// recovery and deletion protection (docs/threat-model.md).
	pl.Ingest.AddToRolePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Sid:        jsii.String("WriteEventsAndQuarantine"),
		Actions:    jsii.Strings("dynamodb:BatchWriteItem"),
		Resources:  &[]*string{pl.Table.TableArn()},
		Conditions: leadingKeys("E#*", "Q#*"),
	}))
	// PutItem may overwrite a shard record but not delete one; UpdateItem
	// adds hours to a day's hour index, beside it. A batch's new sources
	// read their records and the previous days' hour indexes in bulk
	// (BatchGetItem), the others one at a time (GetItem).
	pl.Ingest.AddToRolePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Sid:        jsii.String("ShardRecords"),
		Actions:    jsii.Strings("dynamodb:GetItem", "dynamodb:BatchGetItem", "dynamodb:PutItem", "dynamodb:UpdateItem"),
		Resources:  &[]*string{pl.Table.TableArn()},
		Conditions: leadingKeys("M#*"),
	}))
	// The first writer of a (source, day) lists it in the day's catalogue.
	pl.Ingest.AddToRolePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Sid:        jsii.String("Catalogue"),
		Actions:    jsii.Strings("dynamodb:PutItem"),
		Resources:  &[]*string{pl.Table.TableArn()},
		Conditions: leadingKeys("S#*"),
	}))
}

func (pl *Pipeline) queryGrants(p Props) {
	tableArn := pl.Table.TableArn()
	indexArn := awscdk.Fn_Join(jsii.String(""), &[]*string{tableArn, jsii.String("/index/" + schema.GSIName)})
	// One Query grant covers every read: events (E#, and the GSI), the
	// quarantine (Q#), a day's shard record and hour index (M#), counters
	// (C#) and the catalogue (S#).
	pl.Query.AddToRolePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Sid:       jsii.String("QueryEvents"),
		Actions:   jsii.Strings("dynamodb:Query"),
		Resources: &[]*string{tableArn, indexArn},
	}))
	// A page reads the shard records and hour indexes of several days in
	// one BatchGetItem (M#); a lean GSI page also fetches its events from
	// the table (E#).
	batch := []string{"M#*"}
	if schema.Projection(p.GSIProjection) == schema.Lean {
		batch = append(batch, "E#*")
	}
	pl.Query.AddToRolePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Sid:        jsii.String("BatchRead"),
		Actions:    jsii.Strings("dynamodb:BatchGetItem"),
		Resources:  &[]*string{tableArn},
		Conditions: leadingKeys(batch...),
	}))
	// A chart reads where the counters' fold and roll-up stand: two items
	// by key in the counters' own space (C##, docs/counts.md).
	pl.Query.AddToRolePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Sid:        jsii.String("CounterLevels"),
		Actions:    jsii.Strings("dynamodb:GetItem"),
		Resources:  &[]*string{tableArn},
		Conditions: leadingKeys("C##*"),
	}))
	pl.Query.AddToRolePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Sid:       jsii.String("ReadCursorSecret"),
		Actions:   jsii.Strings("secretsmanager:GetSecretValue"),
		Resources: &[]*string{pl.CursorSecret.SecretArn()},
	}))
}
