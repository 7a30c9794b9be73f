package shardline

import (
	"reflect"
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
	// ArchiveTable is the Glue table's name.
	ArchiveTable = "events"
)

// archive deploys the archive when Props.Archive is on: the bucket and its
// access-log bucket, the function on the table's stream, the Glue database
// and table Athena reads through, and a managed policy for its readers.
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
	awscdk.NewCfnOutput(stack, jsii.String("ArchiveBucket"), &awscdk.CfnOutputProps{Value: pl.ArchiveBucket.BucketName(), Description: jsii.String("S3 bucket of archived events (events/src=<source>/day=<YYYY-MM-DD>/)")})
	awscdk.NewCfnOutput(stack, jsii.String("ArchiveDatabase"), &awscdk.CfnOutputProps{Value: jsii.String(database), Description: jsii.String("Glue database of the archive's Athena table " + ArchiveTable)})
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

// glueTable declares the Glue database and the table Athena reads the
// archive through, and returns the database's name. Partition projection
// on src (injected: a query names its source) and day (a date) finds the
// partitions from their paths, so no crawler or MSCK REPAIR is needed and a
// late event's object is found in its old day at once.
func (pl *Pipeline) glueTable(scope constructs.Construct) string {
	stack := awscdk.Stack_Of(scope)
	name := glueName(*stack.StackName()) + "_archive"
	db := awsglue.NewCfnDatabase(scope, jsii.String("Database"), &awsglue.CfnDatabaseProps{
		CatalogId: stack.Account(),
		DatabaseInput: &awsglue.CfnDatabase_DatabaseInputProperty{
			Name: jsii.String(name), Description: jsii.String("shardline's archive of stored events (docs/archive.md)"),
		},
	})
	bucket := *pl.ArchiveBucket.BucketName()
	str := func(n string) *awsglue.CfnTable_ColumnProperty {
		return &awsglue.CfnTable_ColumnProperty{Name: jsii.String(n), Type: jsii.String("string")}
	}
	var columns []*awsglue.CfnTable_ColumnProperty
	for _, c := range ArchiveColumns() {
		columns = append(columns, str(c))
	}
	table := awsglue.NewCfnTable(scope, jsii.String("Table"), &awsglue.CfnTableProps{
		CatalogId:    stack.Account(),
		DatabaseName: jsii.String(name),
		TableInput: &awsglue.CfnTable_TableInputProperty{
			Name:          jsii.String(ArchiveTable),
			Description:   jsii.String("every stored event, one row per change (INSERT, MODIFY); keep each event's row with the largest seq"),
			TableType:     jsii.String("EXTERNAL_TABLE"),
			PartitionKeys: &[]interface{}{str("src"), str("day")},
			Parameters: &map[string]interface{}{
				"classification":               "json",
				"compressionType":              "gzip",
				"projection.enabled":           "true",
				"projection.src.type":          "injected",
				"projection.day.type":          "date",
				"projection.day.format":        "yyyy-MM-dd",
				"projection.day.range":         "2000-01-01,NOW+1DAYS",
				"projection.day.interval":      "1",
				"projection.day.interval.unit": "DAYS",
				"storage.location.template":    "s3://" + bucket + "/" + archive.Prefix + "src=${src}/day=${day}/",
			},
			StorageDescriptor: &awsglue.CfnTable_StorageDescriptorProperty{
				Columns:      &columns,
				Location:     jsii.String("s3://" + bucket + "/" + archive.Prefix),
				InputFormat:  jsii.String("org.apache.hadoop.mapred.TextInputFormat"),
				OutputFormat: jsii.String("org.apache.hadoop.hive.ql.io.HiveIgnoreKeyTextOutputFormat"),
				Compressed:   jsii.Bool(true),
				SerdeInfo: &awsglue.CfnTable_SerdeInfoProperty{
					SerializationLibrary: jsii.String("org.openx.data.jsonserde.JsonSerDe"),
				},
			},
		},
	})
	table.AddDependency(db)
	return name
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
// archive with Athena: read the events prefix and the Glue table, nothing
// else. Athena's own permissions and a query-results location are the
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
				Resources: &[]*string{glue("catalog"), glue("database/" + database), glue("table/" + database + "/" + ArchiveTable)},
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
