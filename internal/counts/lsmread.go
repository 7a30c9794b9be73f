package counts

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/shardline/shardline/internal/schema"
	"github.com/shardline/shardline/pkg/bucketing"
)

// Read answers r from every level: the source's counter partition (the
// per-source counter's items of this release and those before, and L2's
// hour items), then the L1 packs of the source's bucket that are done and
// not yet all rolled up, each tuple only if its L2 item's watermark is
// below its run. So a tuple is read from one level, never two, whatever
// the roll-up has done between the reads: an item's watermark moves only
// with the tuples it adds. Requests: the partition's Query (paged by 1 MB),
// two small reads of where the fold and the roll-up stand, and the
// bucket's Query.
//
// Every read is strongly consistent, and where the fold and the roll-up
// stand is read first: an item then holds at least every run the roll-up
// had rolled, and a pack of every run the fold had done exists. (An
// eventually consistent read of an item the roll-up has just written
// could miss runs that the cursor says are rolled.)
func (l *LSM) Read(ctx context.Context, r Request) (Response, error) {
	resp := Response{Interval: r.Name, From: r.From.Format(time.RFC3339), To: r.To.Format(time.RFC3339)}
	t := newTally(r)
	b := bucketOf(r.Source, l.buckets())
	done, err := l.getNumber(ctx, foldPK, foldStateSK, foldDone)
	if err != nil {
		return resp, fmt.Errorf("read counters of %s: %w", r.Source, err)
	}
	rolled, err := l.getNumber(ctx, rolledPK, l.rolledSK(b), rolledRun)
	if err != nil {
		return resp, fmt.Errorf("read counters of %s: %w", r.Source, err)
	}
	resp.Plan.Requests += 2
	resp.Plan.ConsumedRCU += 2 // two items under 4 KB, strongly consistent
	l2 := map[string]l2Item{}  // by hour sort key
	q := Query(l.Table, r)
	q.ConsistentRead = aws.Bool(true)
	err = pages(ctx, l.Client, q, &resp.Plan, func(it map[string]types.AttributeValue) error {
		if err := r.add(t, it); err != nil {
			return err
		}
		l2it, err := decodeL2(it)
		if err != nil {
			return err
		}
		for _, x := range l2it.tuples {
			r.count(t, x.Minute, x.Type, x.N)
		}
		if sk, ok := it[schema.SK].(*types.AttributeValueMemberS); ok && l2it.mark > 0 {
			l2[sk.Value] = l2it
		}
		return nil
	})
	if err != nil {
		return resp, fmt.Errorf("read counters of %s: %w", r.Source, err)
	}
	if err := l.readUnrolled(ctx, r, t, l2, done, rolled, &resp.Plan); err != nil {
		return resp, err
	}
	resp.Series = r.series(t.done())
	return resp, nil
}

// ReadClient is the part of the DynamoDB client a read of every level
// uses: it writes nothing.
type ReadClient interface {
	GetItem(context.Context, *dynamodb.GetItemInput, ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
	Query(context.Context, *dynamodb.QueryInput, ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error)
}

// ReadLevels is LSM.Read for a reader that may not write (the query
// function): r answered from every level of table, with buckets L1
// buckets (EnvBuckets).
func ReadLevels(ctx context.Context, c ReadClient, table string, buckets int, r Request) (Response, error) {
	l := &LSM{Client: readOnly{c}, Table: table, Buckets: buckets}
	return l.Read(ctx, r)
}

// readOnly is an LSMClient whose writes fail: Read never writes.
type readOnly struct{ ReadClient }

var errReadOnly = errors.New("counts: a read of the levels does not write")

func (readOnly) PutItem(context.Context, *dynamodb.PutItemInput, ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	return nil, errReadOnly
}

func (readOnly) UpdateItem(context.Context, *dynamodb.UpdateItemInput, ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	return nil, errReadOnly
}

// readUnrolled adds the done L1 tuples of r's source that its L2 items do
// not hold, with the 100-types rule applied as the roll-up will.
func (l *LSM) readUnrolled(ctx context.Context, r Request, t tally, l2 map[string]l2Item, done, rolled int64, plan *Plan) error {
	if rolled >= done {
		return nil
	}
	runs, qp, err := l.readPacks(ctx, bucketOf(r.Source, l.buckets()), rolled, done, r.Source)
	plan.Requests += qp.Requests
	plan.ConsumedRCU += qp.ConsumedRCU
	if err != nil {
		return fmt.Errorf("read counters of %s: %w", r.Source, err)
	}
	byHour := map[string][]runTuples{}
	var hours []string
	for _, rt := range runs {
		for _, x := range rt.tuples {
			h := bucketing.Hour(x.Minute)
			if len(byHour[h]) == 0 {
				hours = append(hours, h)
			}
			byHour[h] = withTuple(byHour[h], rt.run, x)
		}
	}
	for _, h := range hours {
		it := l2[h]
		for _, x := range capTypes(it.tuples, it.above(byHour[h]), l.maxTypes()) {
			r.count(t, x.Minute, x.Type, x.N)
		}
	}
	return nil
}
