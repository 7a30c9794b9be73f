package shardline

import (
	"reflect"
	"strconv"
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatch"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsglue"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambdaeventsources"
	"github.com/aws/aws-cdk-go/awscdk/v2/awss3"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"
	"github.com/cdklabs/cdk-nag-go/cdknag/v2"

	"github.com/shardline/shardline/internal/archive"
)

// Settings of the archive (docs/archive.md).
const (
	// ArchiveBatchingWindow is how long the archive's mapping gathers a
	// stream shard's records, in seconds, the most Lambda allows: fewer,
	// larger objects for Athena and fewer PUTs, for up to five minutes of
	// lag that an archive can afford.
	ArchiveBatchingWindow = 300
	// ArchiveBatchSize is the most records per invocation.
	ArchiveBatchSize = 10000
	// ArchiveIteratorAgeSeconds is when the archive's lag alarms: well
	// before the table's stream, which keeps records 24 hours, drops any.
	ArchiveIteratorAgeSeconds = 900
	// ArchiveTierDays is when archived objects move to S3
	// Intelligent-Tiering (objects under 128 KB stay where they are).
	ArchiveTierDays = 30
	// ArchiveNoncurrentDays keeps an overwritten object's old version.
	ArchiveNoncurrentDays = 30
	// ArchiveTable is the Glue table of the archive's layout v2, partitioned
	// by the source's bucket and the day.
	ArchiveTable = archive.Table
	// ArchiveV1Table is the Glue table of the layout v1 (one partition per
	// source and day), which the archive wrote before: its objects stay
	// where they are, readable through it.
	ArchiveV1Table = archive.V1Table
)

// archive deploys the archive when Props.Archive is on: the bucket and its
// access-log bucket, the function on the table's stream, the Glue database
// and tables Athena reads through, and a managed policy for its readers.
func (pl *Pipeline) archive(c constructs.Construct, p Props) {
	if !*p.Archive {
		return
	}
	store := constructs.NewConstruct(c, jsii.String("ArchiveStore"))
	// Server access logs are granted by a bucket policy (with the source
	// bucket and account as conditions), not by the legacy log-delivery ACL.
	store.Node().SetContext(jsii.String("@aws-cdk/aws-s3:serverAccessLogsUseBucketPolicy"), true)
	pl.ArchiveBucket = archiveBucket(store, p)
	pl.archiveFunction(c, p)
	database := pl.glueTable(store)
	pl.ArchiveReaders = archiveReaders(store, pl.ArchiveBucket, database)

	stack := awscdk.Stack_Of(c)
	awscdk.NewCfnOutput(stack, jsii.String("ArchiveBucket"), &awscdk.CfnOutputProps{Value: pl.ArchiveBucket.BucketName(), Description: jsii.String("S3 bucket of archived events (events/v2/bucket=<NN>/day=<YYYY-MM-DD>/, NN = crc32(source) % 32; shardline archive query prints a source's query)")})
	awscdk.NewCfnOutput(stack, jsii.String("ArchiveDatabase"), &awscdk.CfnOutputProps{Value: jsii.String(database), Description: jsii.String("Glue database of the archive's Athena tables " + ArchiveTable + " (and " + ArchiveV1Table + ", the layout before)")})
	awscdk.NewCfnOutput(stack, jsii.String("ArchiveReaderPolicyArn"), &awscdk.CfnOutputProps{Value: pl.ArchiveReaders.ManagedPolicyArn(), Description: jsii.String("managed policy to attach to whoever may read the archive")})
}

// archiveBucket is the bucket of archived events, encrypted, private,
// TLS-only, versioned (an overwrite keeps the old version for
// ArchiveNoncurrentDays), logging its access to a bucket of its own, and
// retained when the stack is deleted, like the table.
func archiveBucket(scope constructs.Construct, p Props) awss3.Bucket {
	logs := awss3.NewBucket(scope, jsii.String("AccessLogs"), &awss3.BucketProps{
		Encryption:        awss3.BucketEncryption_S3_MANAGED, // the only encryption S3 log delivery writes to
		BlockPublicAccess: awss3.BlockPublicAccess_BLOCK_ALL(),
		EnforceSSL:        jsii.Bool(true),
		ObjectOwnership:   awss3.ObjectOwnership_BUCKET_OWNER_ENFORCED,
		RemovalPolicy:     awscdk.RemovalPolicy_RETAIN,
		LifecycleRules: &[]*awss3.LifecycleRule{{
			Id:         jsii.String("expire-access-logs"),
			Expiration: awscdk.Duration_Days(jsii.Number(float64(p.LogRetentionDays))),
		}},
	})
	cdknag.NagSuppressions_AddResourceSuppressions(logs, &[]*cdknag.NagPackSuppression{{
		Id:     jsii.String("AwsSolutions-S1"),
		Reason: jsii.String("This bucket receives the archive bucket's server access logs; logging its own access would need another bucket, whose access would need another."),
	}}, jsii.Bool(false))

	rule := &awss3.LifecycleRule{
		Id:                                  jsii.String("archive-events"),
		Prefix:                              jsii.String(archive.Prefix),
		Transitions:                         &[]*awss3.Transition{{StorageClass: awss3.StorageClass_INTELLIGENT_TIERING(), TransitionAfter: awscdk.Duration_Days(jsii.Number(ArchiveTierDays))}},
		NoncurrentVersionExpiration:         awscdk.Duration_Days(jsii.Number(ArchiveNoncurrentDays)),
		AbortIncompleteMultipartUploadAfter: awscdk.Duration_Days(jsii.Number(1)),
	}
	if p.ArchiveExpiryDays > 0 {
		rule.Expiration = awscdk.Duration_Days(jsii.Number(float64(p.ArchiveExpiryDays)))
	}
	return awss3.NewBucket(scope, jsii.String("Bucket"), &awss3.BucketProps{
		Encryption:             awss3.BucketEncryption_S3_MANAGED,
		BlockPublicAccess:      awss3.BlockPublicAccess_BLOCK_ALL(),
		EnforceSSL:             jsii.Bool(true),
		MinimumTLSVersion:      jsii.Number(1.2),
		ObjectOwnership:        awss3.ObjectOwnership_BUCKET_OWNER_ENFORCED,
		Versioned:              jsii.Bool(true),
		ServerAccessLogsBucket: logs,
		ServerAccessLogsPrefix: jsii.String("archive/"),
		LifecycleRules:         &[]*awss3.LifecycleRule{rule},
		RemovalPolicy:          awscdk.RemovalPolicy_RETAIN,
	})
}

// archiveFunction declares the archive function on the table's stream:
// inserted or rewritten events only, batched for five minutes. A batch
// that cannot succeed is bisected, retried StreamRetryAttempts times, and
// given up on, records included, to the FailedBatches bucket, for
// `shardline redrive` to archive. It may put objects under the events
// prefix and nothing else.
func (pl *Pipeline) archiveFunction(c constructs.Construct, p Props) {
	pl.Archive = pl.function(c, p, "Archive", 256, awscdk.Duration_Seconds(jsii.Number(120)), map[string]string{
		archive.EnvBucket:   *pl.ArchiveBucket.BucketName(),
		archive.EnvLogLevel: p.logLevel(),
	})
	storedEvents := awslambda.FilterCriteria_Filter(&map[string]interface{}{
		"eventName": awslambda.FilterRule_Or(jsii.String("INSERT"), jsii.String("MODIFY")),
		"dynamodb": map[string]interface{}{
			"Keys": map[string]interface{}{"pk": map[string]interface{}{"S": awslambda.FilterRule_BeginsWith(jsii.String("E#"))}},
		},
	})
	src := awslambdaeventsources.NewDynamoEventSource(pl.Table, &awslambdaeventsources.DynamoEventSourceProps{
		StartingPosition:      awslambda.StartingPosition_TRIM_HORIZON,
		BatchSize:             jsii.Number(ArchiveBatchSize),
		MaxBatchingWindow:     awscdk.Duration_Seconds(jsii.Number(ArchiveBatchingWindow)),
		ParallelizationFactor: jsii.Number(1),
		Filters:               &[]*map[string]interface{}{storedEvents},
		BisectBatchOnError:    jsii.Bool(true),
		RetryAttempts:         jsii.Number(StreamRetryAttempts),
		MaxRecordAge:          awscdk.Duration_Seconds(jsii.Number(StreamMaxRecordAge.Seconds())),
		OnFailure:             pl.onFailure(),
		MetricsConfig:         eventCount(),
	})
	pl.Archive.AddEventSource(src)
	pl.watchGivenUp("Archive", "Lambda gave up on table stream batches of the archive function", pl.Archive, src.EventSourceMappingId())
	pl.Archive.AddToRolePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Sid:       jsii.String("WriteArchive"),
		Actions:   jsii.Strings("s3:PutObject"),
		Resources: &[]*string{pl.ArchiveBucket.ArnForObjects(jsii.String(archive.Prefix + "*"))},
	}))
	cdknag.NagSuppressions_AddResourceSuppressions(pl.Archive.Role(), &[]*cdknag.NagPackSuppression{{
		Id:        jsii.String("AwsSolutions-IAM5"),
		Reason:    jsii.String("Object keys name each batch and are not known in advance: PutObject is limited to the archive bucket's events/ prefix (no read, list or delete)."),
		AppliesTo: &[]interface{}{&cdknag.RegexAppliesTo{Regex: jsii.String(`/^Resource::<.*ArchiveStoreBucket.*\.Arn>\/events\/\*$/g`)}},
	}}, jsii.Bool(true))
}

// glueTable declares the Glue database and the tables Athena reads the
// archive through, and returns the database's name: events over the
// layout v2 and events_v1 over the objects the layout v1 wrote. Partition
// projection finds the partitions from their paths, so no crawler or MSCK
// REPAIR is needed and a late event's object is found in its old day at
// once.
func (pl *Pipeline) glueTable(scope constructs.Construct) string {
	stack := awscdk.Stack_Of(scope)
	name := glueName(*stack.StackName()) + "_archive"
	db := awsglue.NewCfnDatabase(scope, jsii.String("Database"), &awsglue.CfnDatabaseProps{
		CatalogId: stack.Account(),
		DatabaseInput: &awsglue.CfnDatabase_DatabaseInputProperty{
			Name: jsii.String(name), Description: jsii.String("shardline's archive of stored events (docs/archive.md)"),
		},
	})
	root := "s3://" + *pl.ArchiveBucket.BucketName() + "/"
	day := map[string]interface{}{
		"projection.day.type":          "date",
		"projection.day.format":        "yyyy-MM-dd",
		"projection.day.range":         "2000-01-01,NOW+1DAYS",
		"projection.day.interval":      "1",
		"projection.day.interval.unit": "DAYS",
	}
	// bucket is an integer of two digits, 00 to 31: a query that names it
	// reads one bucket; one that does not reads them all, still correct.
	v2 := map[string]interface{}{
		"projection.bucket.type":    "integer",
		"projection.bucket.range":   "0," + strconv.Itoa(archive.Buckets-1),
		"projection.bucket.digits":  "2",
		"storage.location.template": root + archive.LayoutPrefix + "bucket=${bucket}/day=${day}/",
	}
	// src is injected: a query of the layout v1 must name its source.
	v1 := map[string]interface{}{
		"projection.src.type":       "injected",
		"storage.location.template": root + archive.V1Template,
	}
	for k, v := range day {
		v1[k], v2[k] = v, v
	}
	tables := []struct {
		id, name, description, location string
		partitions                      []*awsglue.CfnTable_ColumnProperty
		params                          map[string]interface{}
	}{
		{"Table", ArchiveTable, "every stored event, one row per change (INSERT, MODIFY), by bucket (crc32(to_utf8(source)) % 32) and day; keep each event's row with the largest seq",
			root + archive.LayoutPrefix, []*awsglue.CfnTable_ColumnProperty{column("bucket", "int"), column("day", "string")}, v2},
		{"TableV1", ArchiveV1Table, "the events archived before the layout by bucket, by source (src) and day; one row per change, keep each event's row with the largest seq",
			root + archive.Prefix, []*awsglue.CfnTable_ColumnProperty{column("src", "string"), column("day", "string")}, v1},
	}
	for _, t := range tables {
		table := awsglue.NewCfnTable(scope, jsii.String(t.id), &awsglue.CfnTableProps{
			CatalogId:    stack.Account(),
			DatabaseName: jsii.String(name),
			TableInput:   jsonLinesTable(t.name, t.description, t.location, t.partitions, t.params),
		})
		table.AddDependency(db)
	}
	return name
}

// column is a Glue column of type typ.
func column(name, typ string) *awsglue.CfnTable_ColumnProperty {
	return &awsglue.CfnTable_ColumnProperty{Name: jsii.String(name), Type: jsii.String(typ)}
}

// jsonLinesTable is an external table of archive.Line's gzip JSON lines at
// location, partitioned as partitions, with projection params.
func jsonLinesTable(name, description, location string, partitions []*awsglue.CfnTable_ColumnProperty, params map[string]interface{}) *awsglue.CfnTable_TableInputProperty {
	var columns []*awsglue.CfnTable_ColumnProperty
	for _, c := range ArchiveColumns() {
		columns = append(columns, column(c, "string"))
	}
	params["classification"] = "json"
	params["compressionType"] = "gzip"
	params["projection.enabled"] = "true"
	return &awsglue.CfnTable_TableInputProperty{
		Name:          jsii.String(name),
		Description:   jsii.String(description),
		TableType:     jsii.String("EXTERNAL_TABLE"),
		PartitionKeys: &partitions,
		Parameters:    &params,
		StorageDescriptor: &awsglue.CfnTable_StorageDescriptorProperty{
			Columns:      &columns,
			Location:     jsii.String(location),
			InputFormat:  jsii.String("org.apache.hadoop.mapred.TextInputFormat"),
			OutputFormat: jsii.String("org.apache.hadoop.hive.ql.io.HiveIgnoreKeyTextOutputFormat"),
			Compressed:   jsii.Bool(true),
			SerdeInfo: &awsglue.CfnTable_SerdeInfoProperty{
				SerializationLibrary: jsii.String("org.openx.data.jsonserde.JsonSerDe"),
			},
		},
	}
}

// ArchiveColumns are the Glue table's columns: the JSON names of
// archive.Line's fields, so that the table follows the code.
func ArchiveColumns() []string {
	var out []string
	t := reflect.TypeOf(archive.Line{})
	for i := range t.NumField() {
		if tag := t.Field(i).Tag.Get("json"); tag != "" {
			out = append(out, strings.Split(tag, ",")[0])
		}
	}
	return out
}

// glueName spells s as a Glue database name: lower-case letters, digits
// and underscores.
func glueName(s string) string {
	b := []byte(strings.ToLower(s))
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9') {
			b[i] = '_'
		}
	}
	return string(b)
}

// archiveReaders is the managed policy that lets a principal query the
// archive with Athena: read the events prefix and the Glue tables (both
// layouts'), nothing else. Athena's own permissions and a query-results location are the
// reader's account's.
func archiveReaders(scope constructs.Construct, bucket awss3.Bucket, database string) awsiam.ManagedPolicy {
	stack := awscdk.Stack_Of(scope)
	glue := func(resource string) *string {
		return stack.FormatArn(&awscdk.ArnComponents{Service: jsii.String("glue"), Resource: jsii.String(resource)})
	}
	pol := awsiam.NewManagedPolicy(scope, jsii.String("Readers"), &awsiam.ManagedPolicyProps{
		Description: jsii.String("Read shardline's archive through Athena: its events and its Glue table"),
		Statements: &[]awsiam.PolicyStatement{
			awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
				Sid: jsii.String("ReadArchivedEvents"), Actions: jsii.Strings("s3:GetObject"),
				Resources: &[]*string{bucket.ArnForObjects(jsii.String(archive.Prefix + "*"))},
			}),
			awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
				Sid: jsii.String("ListArchivedEvents"), Actions: jsii.Strings("s3:ListBucket"),
				Resources:  &[]*string{bucket.BucketArn()},
				Conditions: &map[string]interface{}{"StringLike": map[string]interface{}{"s3:prefix": []string{archive.Prefix + "*"}}},
			}),
			awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
				Sid: jsii.String("LocateArchive"), Actions: jsii.Strings("s3:GetBucketLocation"),
				Resources: &[]*string{bucket.BucketArn()},
			}),
			awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
				Sid: jsii.String("ReadArchiveTable"), Actions: jsii.Strings("glue:GetDatabase", "glue:GetTable", "glue:GetPartition", "glue:GetPartitions"),
				Resources: &[]*string{glue("catalog"), glue("database/" + database), glue("table/" + database + "/" + ArchiveTable),
					glue("table/" + database + "/" + ArchiveV1Table)},
			}),
		},
	})
	cdknag.NagSuppressions_AddResourceSuppressions(pol, &[]*cdknag.NagPackSuppression{{
		Id:        jsii.String("AwsSolutions-IAM5"),
		Reason:    jsii.String("Readers of the archive read every object under its events/ prefix, whose keys are per batch; nothing outside it."),
		AppliesTo: &[]interface{}{&cdknag.RegexAppliesTo{Regex: jsii.String(`/^Resource::<.*ArchiveStoreBucket.*\.Arn>\/events\/\*$/g`)}},
	}}, jsii.Bool(false))
	return pol
}

// archiveAlarms watch the archive's lag and failures, as the counter's.
func (pl *Pipeline) archiveAlarms(alarm func(id, what string, m awscloudwatch.IMetric, threshold int), p Props) {
	if pl.Archive == nil {
		return
	}
	age := pl.Archive.Metric(jsii.String("IteratorAge"), &awscloudwatch.MetricOptions{
		Statistic: jsii.String("Maximum"), Period: awscdk.Duration_Minutes(jsii.Number(1)),
	})
	alarm("ArchiveIteratorAgeAlarm", "The archive trails the table's writes by more than 15 minutes", age, ArchiveIteratorAgeSeconds*1000)
	alarm("ArchiveErrorsAlarm", "The archive function failed invocations", sum(pl.Archive.MetricErrors(nil)), *p.FunctionErrors)
}
