// Package query is the query function: it reads pages of a source's events
// through the GSI or, for strongly consistent reads and when the GSI cannot
// serve, through a scatter-gather over the base table's shards; and it lists
// the quarantine.
//
// A page is read in steps, each in its own file: plan.go chooses the path
// and the buckets of the range; window.go opens the buckets' segments in
// order, a few ahead of need; segment.go reads a segment's partitions
// lazily, a page of each at a time; merge.go merges them in key order into
// the page; page.go cuts the page to its limit and to Lambda's payload
// limit (size.go) and makes the cursor. gsi.go and scatter.go are the two
// paths.
package query

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/shardline/shardline/internal/shardmap"
)

// Client is the part of the DynamoDB client the query function uses.
type Client interface {
	Query(context.Context, *dynamodb.QueryInput, ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error)
	BatchGetItem(context.Context, *dynamodb.BatchGetItemInput, ...func(*dynamodb.Options)) (*dynamodb.BatchGetItemOutput, error)
	shardmap.API
}

// DefaultConcurrency bounds the DynamoDB requests one page has in flight.
const DefaultConcurrency = 32

// Paths a page is served by.
const (
	PathGSI     = "gsi"
	PathScatter = "scatter"
)

// Plan says how a page was served.
type Plan struct {
	Path        string  `json:"path"`
	Reason      string  `json:"reason"`
	Requests    int     `json:"requests"`
	ConsumedRCU float64 `json:"consumed_rcu"`
}

// Page is one page of results: the items in order, and the cursor of the
// next page (nil on the last).
type Page struct {
	Items []map[string]types.AttributeValue
	Next  *Cursor
	Plan  Plan
}

// ErrDeadline is returned when a page could not be read in time; nothing is
// returned rather than a page that looks complete and is not.
var ErrDeadline = errors.New("query: the page could not be read before the deadline")

// Reader reads pages. It is safe for concurrent use; make one per container.
type Reader struct {
	Client      Client
	Table       string
	Concurrency int              // requests in flight per page; default DefaultConcurrency
	Now         func() time.Time // default time.Now
	// Path, when set to PathGSI or PathScatter, serves every eventually
	// consistent page of events from that path instead of the cheaper one:
	// for tests and benchmarks that compare the two.
	Path string

	days dayCache // what pages learned of each day: schedules, hour indexes
	once sync.Once
}

func (r *Reader) init() {
	r.once.Do(func() {
		if r.Now == nil {
			r.Now = time.Now
		}
	})
}

func str(v types.AttributeValue) string {
	if s, ok := v.(*types.AttributeValueMemberS); ok {
		return s.Value
	}
	return ""
}
