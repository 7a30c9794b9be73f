// Package schema is the one definition of shardline's DynamoDB table: its key
// attributes, its GSI and its TTL attribute. The local run creates the table
// from it and the CDK stack declares the table from it, so the two cannot
// drift.
package schema

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// Attribute names of the table's items.
const (
	PK      = "pk"      // partition key, see bucketing.Stream.PK
	SK      = "sk"      // sort key, see bucketing.SortKey; also the GSI's sort key
	GSIPK   = "gpk"     // the GSI's partition key, see bucketing.GSIPK; events only
	TTL     = "exp"     // expiry, epoch seconds
	Event   = "ev"      // the normalised CloudEvent as JSON
	Type    = "type"    // the event's type, for filters
	Subject = "subject" // the event's subject, for filters; absent when the event has none

	Raw       = "raw"        // quarantine: the bytes received
	RawGzip   = "raw_gz"     // quarantine: the bytes received, gzip-compressed (long records)
	RawSize   = "raw_size"   // quarantine: how many bytes were received, when long
	RawSHA256 = "raw_sha256" // quarantine: the hex SHA-256 of the bytes received, when raw holds only the first of them
	Reason    = "reason"     // quarantine: why the record was not ingested
	Origin    = "origin"     // quarantine: where the record came from (a map)

	ReplayedAt    = "replayed_at"    // quarantine: when a replay last changed the outcome below (RFC 3339 UTC)
	ReplayState   = "replay_state"   // quarantine: what that replay found, item.ReplayStored or item.ReplayInvalid
	ReplayOutcome = "replay_outcome" // quarantine: its outcome, "stored: 2 events" or "still invalid: <reason>"

	Schedule = "sched" // shard-count record: the list of steps
	Version  = "ver"   // shard-count record: optimistic-lock version
	// DaySchedule is the shard-count record's list of steps in place of
	// Schedule on a day whose GSI bucket is the day (bucketing.Step.DayBucket).
	// It has a name of its own so that a writer or reader from before day
	// buckets, which would place or look for the day's GSI entries in hour
	// buckets, finds no schedule it can read and fails, and is retried,
	// rather than hiding events.
	DaySchedule = "dsched"
	// BaseSchedule is the shard-count record's list of steps in place of
	// Schedule on a day whose events have no GSI copy
	// (bucketing.Step.NoGSICopy, GSI_COPIES=where-it-pays). Its own name,
	// for the same reason: a reader from before it would look for the
	// day's events on the GSI and find none; it fails instead, and a
	// writer from before it would give them copies the readers skip.
	BaseSchedule = "bsched"
	Hours        = "hrs" // hour index: the UTC hours of a day that hold events (a number set)
)

// StreamView is what the table's stream carries: the new image of each
// item, from which the counter function reads an inserted event's type.
const StreamView = types.StreamViewTypeNewImage

// GSIName is the name of the time-bucket index.
const GSIName = "by-source-hour"

// Projection is what the GSI carries besides its keys.
type Projection string

// The projections.
const (
	// Full carries the event, so a GSI query answers from the index alone.
	// The GSI copy of an item costs as many write units as the item: two
	// writes per event of ceil(size / 1 KB) units each. The default.
	Full Projection = "full"
	// Lean carries only what filters need. The GSI copy costs one write
	// unit whatever the event's size, and a GSI page fetches its events from
	// the table with BatchGetItem: cheaper for events over 1 KB that are
	// written far more often than they are read.
	Lean Projection = "lean"
)

// Projected lists the non-key attributes a GSI of projection p carries.
func (p Projection) Projected() []string {
	if p == Lean {
		return []string{Type, Subject}
	}
	return []string{Event, Type, Subject}
}

// ParseProjection reads "full" or "lean"; empty is Full.
func ParseProjection(s string) (Projection, error) {
	switch Projection(s) {
	case "", Full:
		return Full, nil
	case Lean:
		return Lean, nil
	}
	return "", fmt.Errorf("GSI projection %q: want full or lean", s)
}

// Projected lists the non-key attributes of the default (Full) GSI.
var Projected = Full.Projected()

// KeyAttributes are the attributes that appear in a key schema, all strings.
var KeyAttributes = []string{PK, SK, GSIPK}

// CreateTableInput is the table as shardline expects it by default:
// on-demand, with the Full GSI. TTL is set separately (see Create), as
// DynamoDB requires.
func CreateTableInput(name string) *dynamodb.CreateTableInput {
	return CreateTableInputWith(name, Full)
}

// CreateTableInputWith is the table with a GSI of projection p.
func CreateTableInputWith(name string, p Projection) *dynamodb.CreateTableInput {
	var defs []types.AttributeDefinition
	for _, a := range KeyAttributes {
		defs = append(defs, types.AttributeDefinition{AttributeName: aws.String(a), AttributeType: types.ScalarAttributeTypeS})
	}
	return &dynamodb.CreateTableInput{
		TableName:            aws.String(name),
		BillingMode:          types.BillingModePayPerRequest,
		AttributeDefinitions: defs,
		KeySchema: []types.KeySchemaElement{
			{AttributeName: aws.String(PK), KeyType: types.KeyTypeHash},
			{AttributeName: aws.String(SK), KeyType: types.KeyTypeRange},
		},
		StreamSpecification: &types.StreamSpecification{StreamEnabled: aws.Bool(true), StreamViewType: StreamView},
		GlobalSecondaryIndexes: []types.GlobalSecondaryIndex{{
			IndexName: aws.String(GSIName),
			KeySchema: []types.KeySchemaElement{
				{AttributeName: aws.String(GSIPK), KeyType: types.KeyTypeHash},
				{AttributeName: aws.String(SK), KeyType: types.KeyTypeRange},
			},
			Projection: &types.Projection{
				ProjectionType:   types.ProjectionTypeInclude,
				NonKeyAttributes: p.Projected(),
			},
		}},
	}
}

// TableAPI is the part of the DynamoDB client Create uses.
type TableAPI interface {
	CreateTable(context.Context, *dynamodb.CreateTableInput, ...func(*dynamodb.Options)) (*dynamodb.CreateTableOutput, error)
	DescribeTable(context.Context, *dynamodb.DescribeTableInput, ...func(*dynamodb.Options)) (*dynamodb.DescribeTableOutput, error)
	UpdateTimeToLive(context.Context, *dynamodb.UpdateTimeToLiveInput, ...func(*dynamodb.Options)) (*dynamodb.UpdateTimeToLiveOutput, error)
}

// Create creates the table (if it does not exist yet), waits until it is
// active and turns on TTL. It is for local runs and tests; in AWS the CDK
// stack owns the table.
func Create(ctx context.Context, c TableAPI, name string) error {
	return CreateWith(ctx, c, name, Full)
}

// CreateWith is Create with a GSI of projection p.
func CreateWith(ctx context.Context, c TableAPI, name string, p Projection) error {
	return CreateFrom(ctx, c, CreateTableInputWith(name, p))
}

// CreateFrom is Create from a table definition, such as CreateTableInput's
// with a change a test needs.
func CreateFrom(ctx context.Context, c TableAPI, in *dynamodb.CreateTableInput) error {
	name := aws.ToString(in.TableName)
	_, err := c.CreateTable(ctx, in)
	var inUse *types.ResourceInUseException
	if err != nil && !errors.As(err, &inUse) {
		return fmt.Errorf("create table %s: %w", name, err)
	}
	w := dynamodb.NewTableExistsWaiter(c, func(o *dynamodb.TableExistsWaiterOptions) {
		o.MinDelay, o.MaxDelay = 100*time.Millisecond, time.Second
	})
	if err := w.Wait(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(name)}, 2*time.Minute); err != nil {
		return fmt.Errorf("wait for table %s: %w", name, err)
	}
	_, err = c.UpdateTimeToLive(ctx, &dynamodb.UpdateTimeToLiveInput{
		TableName: aws.String(name),
		TimeToLiveSpecification: &types.TimeToLiveSpecification{
			AttributeName: aws.String(TTL),
			Enabled:       aws.Bool(true),
		},
	})
	if err != nil && !isTTLAlreadyOn(err) {
		return fmt.Errorf("enable TTL on table %s: %w", name, err)
	}
	return nil
}

func isTTLAlreadyOn(err error) bool {
	var v interface{ ErrorMessage() string }
	return errors.As(err, &v) && strings.Contains(strings.ToLower(v.ErrorMessage()), "already enabled")
}

// S is the string of an S attribute value: v's Value, or "" when v is
// nil or of another type.
func S(v types.AttributeValue) string {
	if s, ok := v.(*types.AttributeValueMemberS); ok {
		return s.Value
	}
	return ""
}
