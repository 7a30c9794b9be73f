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

	Raw     = "raw"      // quarantine: the bytes received
	RawGzip = "raw_gz"   // quarantine: the bytes received, gzip-compressed (long records)
	RawSize = "raw_size" // quarantine: how many bytes were received, when long
	Reason  = "reason"   // quarantine: why the record was not ingested
	Origin  = "origin"   // quarantine: where the record came from (a map)

	Schedule = "sched" // shard-count record: the list of steps
	Version  = "ver"   // shard-count record: optimistic-lock version
)

// GSIName is the name of the time-bucket index.
const GSIName = "by-source-hour"

// Projected lists the non-key attributes the GSI carries: what a query needs
// to answer from the index alone, and nothing more (each projected byte is
// written twice).
var Projected = []string{Event, Type, Subject}

// KeyAttributes are the attributes that appear in a key schema, all strings.
var KeyAttributes = []string{PK, SK, GSIPK}

// CreateTableInput is the table as shardline expects it: on-demand, with the
// GSI. TTL is set separately (see Create), as DynamoDB requires.
func CreateTableInput(name string) *dynamodb.CreateTableInput {
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
		GlobalSecondaryIndexes: []types.GlobalSecondaryIndex{{
			IndexName: aws.String(GSIName),
			KeySchema: []types.KeySchemaElement{
				{AttributeName: aws.String(GSIPK), KeyType: types.KeyTypeHash},
				{AttributeName: aws.String(SK), KeyType: types.KeyTypeRange},
			},
			Projection: &types.Projection{
				ProjectionType:   types.ProjectionTypeInclude,
				NonKeyAttributes: Projected,
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
	_, err := c.CreateTable(ctx, CreateTableInput(name))
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
