package counts

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/shardline/shardline/internal/schema"
)

// FoldStats says what one Fold did.
type FoldStats struct {
	Run    int64   // the run it wrote, 0 when there was nothing new
	Chains int     // chains with new links
	Links  int     // links folded
	Tuples int     // tuples written to packs
	Packs  int     // pack items written
	WCU    float64 // write capacity the packs consumed
	Redone bool    // the run's manifest was there: an earlier fold stopped in it
}

// chainIdle is how long after its registration a chain is not read by the
// fold any more once folded: a stream shard is written to for about four
// hours and its mapping gives a batch up after six (StreamMaxRecordAge).
const chainIdle = 24 * time.Hour

// Fold writes the links every chain has gained since the last run into
// the packs of a new run, one per bucket of sources that has a tuple
// (cut in parts past maxL1Bytes). A run first fixes, in its manifest and
// on condition that no other fold did, which links it folds; its packs
// are then a function of the manifest, so a fold that stops half way is
// finished by the next, which writes the same packs again. The state's
// done run moves only when every pack of the run is written, and readers
// read only done runs.
func (l *LSM) Fold(ctx context.Context) (FoldStats, error) {
	var st FoldStats
	done, err := l.getNumber(ctx, foldPK, foldStateSK, foldDone)
	if err != nil {
		return st, fmt.Errorf("fold: %w", err)
	}
	run := done + 1
	ranges, found, err := l.readManifest(ctx, run)
	if err != nil {
		return st, err
	}
	if !found {
		if ranges, err = l.newRanges(ctx); err != nil {
			return st, err
		}
		if len(ranges) == 0 {
			return st, nil
		}
		if err := l.putManifest(ctx, run, ranges); err != nil {
			if isCond(err) {
				return st, nil // another fold took the run
			}
			return st, err
		}
	}
	st.Run, st.Redone, st.Chains = run, found, len(ranges)
	byBucket, links, err := l.gather(ctx, ranges)
	if err != nil {
		return st, err
	}
	st.Links = links
	if err := l.writePacks(ctx, run, byBucket, &st); err != nil {
		return st, err
	}
	if err := l.each(len(ranges), func(i int) error {
		return l.setFolded(ctx, ranges[i])
	}); err != nil {
		return st, err
	}
	if err := l.setNumber(ctx, foldPK, foldStateSK, foldDone, run); err != nil {
		return st, fmt.Errorf("fold: %w", err)
	}
	return st, nil
}

// linkRange is the links of one chain a run folds: those after from, up
// to and including the one whose last is to.
type linkRange struct{ chain, from, to string }

// newRanges lists the chains and, for each that has links beyond what was
// folded, the range of them.
func (l *LSM) newRanges(ctx context.Context) ([]linkRange, error) {
	chains, err := l.chains(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]*linkRange, len(chains))
	if err := l.each(len(chains), func(i int) error {
		c := chains[i]
		links, err := ReadLinks(ctx, l.Client, l.Table, c.chain, c.from)
		if err != nil {
			return fmt.Errorf("fold: %w", err)
		}
		if len(links) > 0 {
			out[i] = &linkRange{chain: c.chain, from: c.from, to: links[len(links)-1].Last}
		}
		return nil
	}); err != nil {
		return nil, err
	}
	var ranges []linkRange
	for _, r := range out {
		if r != nil {
			ranges = append(ranges, *r)
		}
	}
	return ranges, nil
}

// chains reads the registry: each chain and where its fold stands; chains
// registered more than chainIdle ago are left out.
func (l *LSM) chains(ctx context.Context) ([]linkRange, error) {
	p := dynamodb.NewQueryPaginator(l.Client, &dynamodb.QueryInput{
		TableName:                 aws.String(l.Table),
		KeyConditionExpression:    aws.String("#pk = :pk"),
		ExpressionAttributeNames:  map[string]string{"#pk": schema.PK},
		ExpressionAttributeValues: map[string]types.AttributeValue{":pk": &types.AttributeValueMemberS{Value: chainsPK}},
		ConsistentRead:            aws.Bool(true),
	})
	idle := l.now().Add(-chainIdle).Unix()
	var out []linkRange
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("fold: list the chains: %w", err)
		}
		for _, it := range page.Items {
			sk, _ := it[schema.SK].(*types.AttributeValueMemberS)
			if sk == nil {
				continue
			}
			r := linkRange{chain: sk.Value, from: "0"}
			if v, ok := it[chainFolded].(*types.AttributeValueMemberN); ok {
				r.from = v.Value
			}
			if v, ok := it[chainAt].(*types.AttributeValueMemberN); ok {
				if at, err := strconv.ParseInt(v.Value, 10, 64); err == nil && at < idle && r.from != "0" {
					continue
				}
			}
			out = append(out, r)
		}
	}
	return out, nil
}

func manifestSK(run int64) string { return manifestPfx + padRun(run) }

// putManifest writes run's manifest, on condition that no fold wrote it.
func (l *LSM) putManifest(ctx context.Context, run int64, ranges []linkRange) error {
	m := map[string]types.AttributeValue{}
	for _, r := range ranges {
		m[r.chain] = &types.AttributeValueMemberS{Value: r.from + runAttrSep + r.to}
	}
	it := key(foldPK, manifestSK(run))
	it[manifestRuns] = &types.AttributeValueMemberM{Value: m}
	it[schema.TTL] = &types.AttributeValueMemberN{Value: l.expiry()}
	_, err := l.Client.PutItem(ctx, &dynamodb.PutItemInput{
		TableName:                aws.String(l.Table),
		Item:                     it,
		ConditionExpression:      aws.String("attribute_not_exists(#pk)"),
		ExpressionAttributeNames: map[string]string{"#pk": schema.PK},
	})
	if err != nil && !isCond(err) {
		return fmt.Errorf("fold: write the manifest of run %d: %w", run, err)
	}
	return err
}

// readManifest reads run's manifest, strongly consistent.
func (l *LSM) readManifest(ctx context.Context, run int64) ([]linkRange, bool, error) {
	out, err := l.Client.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:      aws.String(l.Table),
		Key:            key(foldPK, manifestSK(run)),
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return nil, false, fmt.Errorf("fold: read the manifest of run %d: %w", run, err)
	}
	m, ok := out.Item[manifestRuns].(*types.AttributeValueMemberM)
	if !ok {
		return nil, false, nil
	}
	var ranges []linkRange
	for chain, v := range m.Value {
		s, _ := v.(*types.AttributeValueMemberS)
		from, to, ok := strings.Cut(aws.ToString(ptr(s)), runAttrSep)
		if s == nil || !ok {
			return nil, false, fmt.Errorf("fold: the manifest of run %d is malformed at %s", run, chain)
		}
		ranges = append(ranges, linkRange{chain: chain, from: from, to: to})
	}
	sort.Slice(ranges, func(i, j int) bool { return ranges[i].chain < ranges[j].chain })
	return ranges, true, nil
}

func ptr(s *types.AttributeValueMemberS) *string {
	if s == nil {
		return nil
	}
	return &s.Value
}

// gather reads the links of ranges and sorts their tuples into buckets.
func (l *LSM) gather(ctx context.Context, ranges []linkRange) (map[int][]Tuple, int, error) {
	var mu sync.Mutex
	byBucket := map[int][]Tuple{}
	links := 0
	err := l.each(len(ranges), func(i int) error {
		r := ranges[i]
		got, err := ReadLinks(ctx, l.Client, l.Table, r.chain, r.from)
		if err != nil {
			return fmt.Errorf("fold: %w", err)
		}
		mu.Lock()
		defer mu.Unlock()
		reached := false
		for _, lk := range got {
			links++
			for _, x := range lk.Tuples {
				b := bucketOf(x.Source, l.buckets())
				byBucket[b] = append(byBucket[b], x)
			}
			if lk.Last == r.to {
				reached = true
				break
			}
		}
		if !reached {
			return fmt.Errorf("fold: the chain of %s has no link ending at %s, which the manifest names", r.chain, r.to)
		}
		return nil
	})
	return byBucket, links, err
}

// writePacks writes each bucket's tuples of run, in parts under
// maxL1Bytes. A pack written again is the same item.
func (l *LSM) writePacks(ctx context.Context, run int64, byBucket map[int][]Tuple, st *FoldStats) error {
	buckets := make([]int, 0, len(byBucket))
	for b := range byBucket {
		buckets = append(buckets, b)
	}
	var mu sync.Mutex
	return l.each(len(buckets), func(i int) error {
		b := buckets[i]
		parts, err := cutPacks(byBucket[b], maxL1Bytes)
		if err != nil {
			return fmt.Errorf("fold: %w", err)
		}
		for n, p := range parts {
			it := key(l.packPK(b), padRun(run)+packPartSep+fmt.Sprintf(packPartFmt, n))
			it[packRun] = &types.AttributeValueMemberN{Value: strconv.FormatInt(run, 10)}
			it[l2Pack] = &types.AttributeValueMemberB{Value: p}
			it[schema.TTL] = &types.AttributeValueMemberN{Value: l.expiry()}
			out, err := l.Client.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(l.Table), Item: it, ReturnConsumedCapacity: types.ReturnConsumedCapacityTotal})
			if err != nil {
				return fmt.Errorf("fold: write the pack of bucket %d, run %d: %w", b, run, err)
			}
			mu.Lock()
			st.Packs++
			if out.ConsumedCapacity != nil {
				st.WCU += aws.ToFloat64(out.ConsumedCapacity.CapacityUnits)
			}
			mu.Unlock()
		}
		mu.Lock()
		st.Tuples += len(byBucket[b])
		mu.Unlock()
		return nil
	})
}

// cutPacks packs ts in as few parts as keep each under limit bytes,
// cutting between sources; a part always holds at least one source.
func cutPacks(ts []Tuple, limit int) ([][]byte, error) {
	sort.Slice(ts, func(i, j int) bool {
		return tupleKey{ts[i].Source, ts[i].Minute.Unix(), ts[i].Type}.less(tupleKey{ts[j].Source, ts[j].Minute.Unix(), ts[j].Type})
	})
	p, err := encodePack(ts)
	if err != nil || len(p) <= limit {
		return [][]byte{p}, err
	}
	mid := len(ts) / 2
	for mid > 0 && ts[mid].Source == ts[mid-1].Source {
		mid--
	}
	if mid == 0 {
		for mid = len(ts) / 2; mid < len(ts) && ts[mid].Source == ts[mid-1].Source; mid++ {
		}
		if mid == len(ts) {
			return [][]byte{p}, nil // one source: its tuples are bounded by its types (docs/counts.md)
		}
	}
	a, err := cutPacks(ts[:mid], limit)
	if err != nil {
		return nil, err
	}
	b, err := cutPacks(ts[mid:], limit)
	return append(a, b...), err
}

// setFolded records in the registry that r's chain is folded up to r.to.
func (l *LSM) setFolded(ctx context.Context, r linkRange) error {
	_, err := l.Client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                aws.String(l.Table),
		Key:                      key(chainsPK, r.chain),
		UpdateExpression:         aws.String("SET #f = :to"),
		ConditionExpression:      aws.String("attribute_not_exists(#f) OR #f < :to"),
		ExpressionAttributeNames: map[string]string{"#f": chainFolded},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":to": &types.AttributeValueMemberN{Value: r.to},
		},
	})
	if err != nil && !isCond(err) {
		return fmt.Errorf("fold: record the fold of %s: %w", r.chain, err)
	}
	return nil
}
