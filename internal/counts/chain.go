package counts

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/shardline/shardline/internal/schema"
)

// L0 of the counts (docs/counts.md, "Counters that do not pay per source
// per batch"): an invocation writes its batch's counts in one item, the
// next link of its stream shard's chain. A link's key is the tip it
// extends (the last sequence number of the link before it), so that the
// links of a shard form one chain of disjoint ranges whatever the
// redeliveries, stale tips and concurrent invocations.

// linkPrefix begins the partition key of a stream shard's chain. No
// source's counter partition can have it: an escaped source holds no '#'.
const linkPrefix = "C##L0#"

// seqWidth is the width a link's sort key pads a sequence number to, so
// that string order is number order.
const seqWidth = maxSeqDigits

// startKey is the sort key of a chain's first link.
var startKey = strings.Repeat("0", seqWidth)

// Attributes of a link.
const (
	linkFirst = "first" // the sequence number of its first record
	linkLast  = "last"  // of its last record: the tip it leaves
	linkN     = "n"     // the events it counts
	linkPack  = "p"     // its counts, a pack (pack.go)
	linkShard = "shard" // the stream shard's id, whole
)

// DefaultMaxLinkBytes is the most pack bytes one link carries: a batch
// whose pack is larger is cut into consecutive links, each well under
// DynamoDB's 400 KB.
const DefaultMaxLinkBytes = 350 << 10

// ChainClient is the part of the DynamoDB client L0 uses.
type ChainClient interface {
	BatchGetItem(context.Context, *dynamodb.BatchGetItemInput, ...func(*dynamodb.Options)) (*dynamodb.BatchGetItemOutput, error)
	UpdateItem(context.Context, *dynamodb.UpdateItemInput, ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error)
	PutItem(context.Context, *dynamodb.PutItemInput, ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error)
	Query(context.Context, *dynamodb.QueryInput, ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error)
}

// Chain writes stream batches as links of their shard's chain. It is safe
// for concurrent use; make one per container.
type Chain struct {
	Client       ChainClient
	Table        string
	Retention    time.Duration    // a link lives a day longer than the events, as counter items
	MaxLinkBytes int              // default DefaultMaxLinkBytes
	Now          func() time.Time // default time.Now; sets the links' TTL

	// tips remembers each shard's tip as this container last wrote or
	// learned it, so that a warm container writes its next link without
	// reading first. A stale tip costs a refused put and is corrected
	// from the link that refused it.
	mu   sync.Mutex
	tips map[string]string
}

// ErrNoShard is returned for an invocation without a shard id.
var ErrNoShard = errors.New("counts: the invocation carries no shardId: give the event source mapping a tumbling window (TumblingWindowInSeconds), which makes Lambda send it")

// ChainStats sums up one Apply of a Chain.
type ChainStats struct {
	Records   int     // stream records received
	Counted   int     // events written in links by this Apply
	Skipped   int     // records that do not count (not an event insert)
	Seen      int     // events at or below the tip: in a link already
	Links     int     // links written
	Puts      int     // PutItem requests, refused ones included
	Conflicts int     // puts refused because the tip was taken
	Reads     int     // Query requests for the tip
	Bytes     int     // pack bytes written
	WCU       float64 // write capacity the puts consumed
}

// maxChainAttempts bounds the puts and reads of one Apply that make no
// progress: each refused put moves the tip forward, so this many in a row
// means another invocation of the shard is writing link after link.
const maxChainAttempts = 16

// HandleChain is Apply as the Lambda entry point takes it.
func (c *Chain) HandleChain(ctx context.Context, ev events.DynamoDBTimeWindowEvent) (events.DynamoDBTimeWindowEventResponse, ChainStats, error) {
	resp := events.DynamoDBTimeWindowEventResponse{}
	resp.State = map[string]string{}
	if ev.ShardID == "" {
		return resp, ChainStats{Records: len(ev.Records)}, ErrNoShard
	}
	st, err := c.Apply(ctx, ev.ShardID, ev.Records)
	return resp, st, err
}

// Apply writes the records of one batch of stream shard shardID that lie
// above the shard's tip as the chain's next link (or links, when they do
// not fit one). Records at or below the tip are in a link already. On
// error nothing is lost and nothing is doubled: the batch is retried, and
// what was written is found at the tip.
func (c *Chain) Apply(ctx context.Context, shardID string, recs []events.DynamoDBEventRecord) (ChainStats, error) {
	parsed, skipped, err := parse(recs)
	x := &extension{c: c, shard: shardID, recs: parsed, st: ChainStats{Records: len(recs), Skipped: skipped}}
	if err != nil || len(parsed) == 0 {
		return x.st, err
	}
	sortBySeq(x.recs)
	x.tip, x.known = c.tip(shardID)
	for {
		if err := x.place(ctx); err != nil {
			return x.st, err
		}
		if len(x.recs) == 0 {
			c.remember(shardID, x.tip)
			return x.st, nil
		}
		if x.stuck == maxChainAttempts {
			return x.st, fmt.Errorf("L0 chain of %s: %d puts refused in a row at the tip: another invocation of the shard keeps extending it", shardID, x.stuck)
		}
		if err := x.extend(ctx); err != nil {
			return x.st, err
		}
	}
}

// extension is one Apply's progress along its shard's chain.
type extension struct {
	c              *Chain
	shard          string
	recs           []record // the records left to write, in sequence order
	tip            string   // the tip as last written or learned
	known, guarded bool     // the tip is known; the guard of an empty chain ran
	stuck          int      // puts refused in a row
	st             ChainStats
}

// place learns the tip when it is not known, and drops the records at or
// below it. While the chain has no link, it registers the chain and leaves
// out what the previous release counted (notCountedBefore), once.
func (x *extension) place(ctx context.Context) error {
	if !x.known {
		tip, err := x.c.readTip(ctx, x.shard)
		if err != nil {
			return err
		}
		x.tip, x.known = tip, true
		x.st.Reads++
	}
	if x.tip == "0" && !x.guarded {
		if err := x.c.register(ctx, x.shard); err != nil {
			return err
		}
		rest, err := x.c.notCountedBefore(ctx, x.shard, x.recs)
		if err != nil {
			return err
		}
		x.st.Seen += len(x.recs) - len(rest)
		x.recs, x.guarded = rest, true
	}
	rest := above(x.recs, x.tip)
	x.st.Seen += len(x.recs) - len(rest)
	x.recs = rest
	return nil
}

// extend writes the next link at the tip. When the tip is taken, it moves
// to the tip the refusal names, or, refused twice in a row, reads it.
func (x *extension) extend(ctx context.Context) error {
	n, pack, err := x.c.cut(x.recs)
	if err != nil {
		return fmt.Errorf("L0 chain of %s: %w", x.shard, err)
	}
	next, wcu, err := x.c.put(ctx, x.shard, x.tip, x.recs[:n], pack)
	x.st.Puts++
	x.st.WCU += wcu
	switch {
	case err == nil:
		x.st.Links++
		x.st.Counted += n
		x.st.Bytes += len(pack)
		x.tip, x.recs, x.stuck = x.recs[n-1].seq, x.recs[n:], 0
		x.c.remember(x.shard, x.tip)
	case errors.Is(err, errTipTaken):
		x.st.Conflicts++
		x.stuck++
		if next == "" || x.stuck > 1 {
			x.known = false // twice behind: read the newest link rather than follow link by link
		} else {
			x.tip = next
		}
	default:
		// The tip stays as it was: if the put was applied and its answer
		// lost, the next put there is refused with the link.
		return err
	}
	return nil
}

// errTipTaken: a link already extends the tip a put tried to extend.
var errTipTaken = errors.New("the tip is taken")

// cut is how many of recs (at least one) the next link takes, and their
// pack: all of them unless the pack would pass MaxLinkBytes.
func (c *Chain) cut(recs []record) (int, []byte, error) {
	limit := c.MaxLinkBytes
	if limit <= 0 {
		limit = DefaultMaxLinkBytes
	}
	n := len(recs)
	for {
		pack, err := encodePack(tuples(recs[:n]))
		if err != nil {
			return 0, nil, err
		}
		if len(pack) <= limit || n == 1 {
			return n, pack, nil
		}
		// Shrink in proportion, with a margin: deflate's ratio varies
		// little across one batch.
		n = max(1, min(n-1, int(float64(n)*float64(limit)/float64(len(pack))*0.9)))
	}
}

// tuples is recs as counts of one event each.
func tuples(recs []record) []Tuple {
	out := make([]Tuple, len(recs))
	for i, r := range recs {
		out[i] = Tuple{Source: r.source, Minute: r.time.Truncate(time.Minute), Type: r.typ, N: 1}
	}
	return out
}

// put writes the link of recs at tip, on condition that the tip is free.
// When it is taken, next is the last sequence number of the link that
// took it ("" when DynamoDB did not say), and the error is errTipTaken.
func (c *Chain) put(ctx context.Context, shardID, tip string, recs []record, pack []byte) (next string, wcu float64, err error) {
	now := time.Now
	if c.Now != nil {
		now = c.Now
	}
	out, err := c.Client.PutItem(ctx, &dynamodb.PutItemInput{
		TableName: aws.String(c.Table),
		Item: map[string]types.AttributeValue{
			schema.PK:  &types.AttributeValueMemberS{Value: linkPK(shardID)},
			schema.SK:  &types.AttributeValueMemberS{Value: padSeq(tip)},
			linkFirst:  &types.AttributeValueMemberN{Value: recs[0].seq},
			linkLast:   &types.AttributeValueMemberN{Value: recs[len(recs)-1].seq},
			linkN:      &types.AttributeValueMemberN{Value: strconv.Itoa(len(recs))},
			linkPack:   &types.AttributeValueMemberB{Value: pack},
			linkShard:  &types.AttributeValueMemberS{Value: shardID},
			schema.TTL: &types.AttributeValueMemberN{Value: strconv.FormatInt(now().Add(c.Retention+24*time.Hour).Unix(), 10)},
		},
		ConditionExpression:                 aws.String("attribute_not_exists(#pk)"),
		ExpressionAttributeNames:            map[string]string{"#pk": schema.PK},
		ReturnConsumedCapacity:              types.ReturnConsumedCapacityTotal,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	if out != nil && out.ConsumedCapacity != nil {
		wcu = aws.ToFloat64(out.ConsumedCapacity.CapacityUnits)
	}
	var cond *types.ConditionalCheckFailedException
	if errors.As(err, &cond) {
		if last, ok := cond.Item[linkLast].(*types.AttributeValueMemberN); ok {
			if next, err = CanonicalSeq(last.Value); err != nil {
				return "", wcu, fmt.Errorf("L0 chain of %s: the link at %s: %w", shardID, tip, err)
			}
		}
		return next, wcu, errTipTaken
	}
	if err != nil {
		return "", wcu, fmt.Errorf("L0 chain of %s: write the link at %s: %w", shardID, tip, err)
	}
	return "", wcu, nil
}

// readTip reads the shard's newest link, strongly consistent: its last
// sequence number is the tip ("0" when the chain has no link).
func (c *Chain) readTip(ctx context.Context, shardID string) (string, error) {
	out, err := c.Client.Query(ctx, &dynamodb.QueryInput{
		TableName:                 aws.String(c.Table),
		KeyConditionExpression:    aws.String("#pk = :pk"),
		ExpressionAttributeNames:  map[string]string{"#pk": schema.PK, "#last": linkLast},
		ExpressionAttributeValues: map[string]types.AttributeValue{":pk": &types.AttributeValueMemberS{Value: linkPK(shardID)}},
		ProjectionExpression:      aws.String("#last"),
		ScanIndexForward:          aws.Bool(false),
		Limit:                     aws.Int32(1),
		ConsistentRead:            aws.Bool(true),
	})
	if err != nil {
		return "", fmt.Errorf("L0 chain of %s: read the tip: %w", shardID, err)
	}
	if len(out.Items) == 0 {
		return "0", nil
	}
	last, ok := out.Items[0][linkLast].(*types.AttributeValueMemberN)
	if !ok {
		return "", fmt.Errorf("L0 chain of %s: the newest link has no %q", shardID, linkLast)
	}
	tip, err := CanonicalSeq(last.Value)
	if err != nil {
		return "", fmt.Errorf("L0 chain of %s: the newest link: %w", shardID, err)
	}
	return tip, nil
}

// chainsPK is the partition of the chains' registry: one item per chain
// (sort key: the stream shard id), which the fold lists. A chain is
// registered before its first link, once per stream shard (a shard lives
// about four hours).
const chainsPK = "C##L0"

// Attributes of a chain's registry item.
const (
	chainFolded = "folded" // the last sequence number the fold has folded (fold.go)
	chainAt     = "at"     // when the chain was registered, Unix seconds
)

// register enters shardID's chain in the registry. It is idempotent, and
// leaves what the fold wrote there.
func (c *Chain) register(ctx context.Context, shardID string) error {
	now := time.Now
	if c.Now != nil {
		now = c.Now
	}
	_, err := c.Client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: aws.String(c.Table),
		Key: map[string]types.AttributeValue{
			schema.PK: &types.AttributeValueMemberS{Value: chainsPK},
			schema.SK: &types.AttributeValueMemberS{Value: shardID},
		},
		UpdateExpression:         aws.String("SET #exp = :exp, #at = if_not_exists(#at, :at)"),
		ExpressionAttributeNames: map[string]string{"#exp": schema.TTL, "#at": chainAt},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":exp": &types.AttributeValueMemberN{Value: strconv.FormatInt(now().Add(c.Retention+24*time.Hour).Unix(), 10)},
			":at":  &types.AttributeValueMemberN{Value: strconv.FormatInt(now().Unix(), 10)},
		},
	})
	if err != nil {
		return fmt.Errorf("L0 chain of %s: register it: %w", shardID, err)
	}
	return nil
}

// maxTips bounds the tips a container remembers: a container serves one
// shard at a time, and a few as shards close and open.
const maxTips = 1 << 10

func (c *Chain) tip(shardID string) (string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	t, ok := c.tips[shardID]
	return t, ok
}

func (c *Chain) remember(shardID, tip string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.tips == nil || len(c.tips) > maxTips {
		c.tips = map[string]string{}
	}
	if old, ok := c.tips[shardID]; !ok || SeqLess(old, tip) {
		c.tips[shardID] = tip
	}
}

// linkPK is the partition key of shardID's chain.
func linkPK(shardID string) string { return linkPrefix + shardID }

// padSeq is a canonical sequence number as a link's sort key.
func padSeq(seq string) string { return strings.Repeat("0", seqWidth-len(seq)) + seq }

// sortBySeq sorts recs by sequence number: a batch comes in order, but
// the chain's argument needs it, so it does not trust that.
func sortBySeq(recs []record) {
	sort.SliceStable(recs, func(i, j int) bool { return SeqLess(recs[i].seq, recs[j].seq) })
}
