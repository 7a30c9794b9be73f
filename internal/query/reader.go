package query

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/shardline/shardline/internal/ddberr"
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
	// Stopped: the deadline ended the page before its limit; Next
	// continues where its reading stopped.
	Stopped bool
}

// ErrDeadline is returned when a page got nowhere before its deadline: not
// one event read, nor any of the range passed over. A page that got
// somewhere is answered, short, with its cursor.
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

// Events reads one page of p.Source's events. A consistent page comes from
// the base table's shards; any other from the path that costs fewer
// requests (planner.go), and from the base table when the GSI cannot serve.
func (r *Reader) Events(ctx context.Context, p Params) (Page, error) {
	r.init()
	if p.Consistent {
		// The estimate's reads are the ones the page needs anyway; they
		// let it open no more days ahead than their hints say it needs.
		pr := r.newPage(Events, &p, scatter{consistent: true})
		if _, err := pr.plan.estimate(ctx); err != nil {
			return pr.result(nil, reasonConsistent), failed(ctx, err)
		}
		return pr.page(ctx, reasonConsistent)
	}
	pr := r.newPage(Events, &p, gsi{})
	via, reason, err := pr.plan.choose(ctx)
	if err != nil {
		if !ddberr.IndexUnavailable(err) {
			return pr.result(nil, reasonGSI), failed(ctx, err)
		}
		via, reason = gsi{}, reasonGSI // the fallback below reads the base table
	}
	pr.via = via
	pg, err := pr.page(ctx, reason)
	if err == nil || !ddberr.IndexUnavailable(err) || via.name() != PathGSI {
		return pg, err
	}
	fb, err := r.newPage(Events, &p, scatter{}).page(ctx, fmt.Sprintf(reasonFallback, ddberr.Code(err)))
	fb.Plan.Requests += pg.Plan.Requests
	fb.Plan.ConsumedRCU += pg.Plan.ConsumedRCU
	return fb, err
}

// Quarantine reads one page of the quarantine, by time received.
func (r *Reader) Quarantine(ctx context.Context, p Params) (Page, error) {
	r.init()
	return r.newPage(Quarantine, &p, scatter{consistent: true}).page(ctx, reasonQuarantine)
}

func (r *Reader) init() {
	r.once.Do(func() {
		if r.Now == nil {
			r.Now = time.Now
		}
	})
}

// newPage is the reader of one page of p on path via, with its own
// planner: what it learns of the range's days, and the requests it makes.
func (r *Reader) newPage(kind Kind, p *Params, via path) *pageReader {
	reqs := newRequests(r.Client, r.Table, r.Concurrency)
	pl := newPlanner(r, kind, p, reqs)
	return &pageReader{kind: kind, p: p, via: via, b: pl.b, plan: pl, reqs: reqs}
}
