package counts

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/shardline/shardline/internal/schema"
)

// The levels above L0 (docs/counts.md, "Counters that do not pay per
// source per batch"): a fold (fold.go) writes the new links of every chain,
// merged, as one pack per bucket of sources and run (L1); a roll-up
// (rollup.go) writes the packs' closed hours into one item per source and
// hour (L2); a read (lsmread.go) sums L2, what L1 holds that L2 does not,
// and the items of the per-source counter.

// DefaultBuckets is the number of L1 buckets: about one per 150 active
// sources keeps a bucket's packs of an hour small to read and its packs of
// a run at a few write units (docs/counts.md).
const DefaultBuckets = 64

// LSMClient is the part of the DynamoDB client the fold, the roll-up and
// the read use.
type LSMClient interface {
	GetItem(context.Context, *dynamodb.GetItemInput, ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
	PutItem(context.Context, *dynamodb.PutItemInput, ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error)
	UpdateItem(context.Context, *dynamodb.UpdateItemInput, ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error)
	Query(context.Context, *dynamodb.QueryInput, ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error)
}

// LSM folds L0 into L1, rolls L1 up into L2, and reads them. The fold and
// the roll-up are safe to run twice at once (each step is conditional or
// writes what it would write again); run them from one schedule.
type LSM struct {
	Client      LSMClient
	Table       string
	Buckets     int              // default DefaultBuckets
	Retention   time.Duration    // items live a day longer than the events
	Now         func() time.Time // default time.Now
	Concurrency int              // requests at once; default 16
	MaxTypes    int              // types an L2 item's ten minutes count by name; default MaxTypesPerItem
	RollupItems int              // L2 items one Rollup takes at most; default DefaultRollupItems
}

// Keys of the levels above L0. None is a source's counter partition: an
// escaped source holds no '#'.
const (
	foldPK       = "C##L1"   // the fold's state (sk foldStateSK) and manifests (sk run#<run>)
	foldStateSK  = "state"   // attribute foldDone: the last run whose packs are all written
	packPrefix   = "C##L1#"  // + <buckets>#<bucket>: a bucket's packs, sk <run>#<part>
	rolledPK     = "C##L2"   // sk <buckets>#<bucket>: attribute rolledRun
	runWidth     = 20        // digits of a run number in a sort key
	foldDone     = "done"    // the state's last done run
	manifestRuns = "chains"  // a manifest's map: chain -> "from-to"
	packRun      = "run"     // a pack's run
	rolledRun    = "rolled"  // every tuple of runs up to it is in L2
	l2Pack       = "p"       // an L2 item's counts, a pack whose sources are ""
	l2Mark       = "wL1"     // an L2 item's watermark: the last run it holds
	overflowType = ""        // the type of a tuple counted without its type (no event's type is empty)
	runAttrSep   = "-"       // between a manifest range's ends
	packPartSep  = "#"       // between a pack's run and its part
	manifestPfx  = "run#"    // a manifest's sort key prefix
	maxPackParts = 1000      // parts of one bucket's pack of one run
	packPartFmt  = "%03d"    // a part's number in a sort key
	maxL1Bytes   = 350 << 10 // pack bytes per L1 item
)

func (l *LSM) buckets() int {
	if l.Buckets > 0 {
		return l.Buckets
	}
	return DefaultBuckets
}

func (l *LSM) now() time.Time {
	if l.Now != nil {
		return l.Now()
	}
	return time.Now()
}

func (l *LSM) maxTypes() int {
	if l.MaxTypes > 0 {
		return l.MaxTypes
	}
	return MaxTypesPerItem
}

func (l *LSM) expiry() string {
	return strconv.FormatInt(l.now().Add(l.Retention+24*time.Hour).Unix(), 10)
}

// bucketOf is source's L1 bucket of n: the first 8 bytes of its SHA-256,
// modulo n.
func bucketOf(source string, n int) int {
	h := sha256.Sum256([]byte(source))
	return int(binary.BigEndian.Uint64(h[:8]) % uint64(n))
}

func (l *LSM) packPK(bucket int) string {
	return packPrefix + strconv.Itoa(l.buckets()) + "#" + strconv.Itoa(bucket)
}

func (l *LSM) rolledSK(bucket int) string {
	return strconv.Itoa(l.buckets()) + "#" + strconv.Itoa(bucket)
}

func padRun(run int64) string {
	s := strconv.FormatInt(run, 10)
	return strings.Repeat("0", runWidth-len(s)) + s
}

func key(pk, sk string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{
		schema.PK: &types.AttributeValueMemberS{Value: pk},
		schema.SK: &types.AttributeValueMemberS{Value: sk},
	}
}

// getNumber reads number attribute name of item (pk, sk), strongly
// consistent; 0 when the item or the attribute is absent.
func (l *LSM) getNumber(ctx context.Context, pk, sk, name string) (int64, error) {
	out, err := l.Client.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:                aws.String(l.Table),
		Key:                      key(pk, sk),
		ConsistentRead:           aws.Bool(true),
		ProjectionExpression:     aws.String("#n"),
		ExpressionAttributeNames: map[string]string{"#n": name},
	})
	if err != nil {
		return 0, fmt.Errorf("read %s %s: %w", pk, sk, err)
	}
	v, ok := out.Item[name].(*types.AttributeValueMemberN)
	if !ok {
		return 0, nil
	}
	n, err := strconv.ParseInt(v.Value, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%s %s %s: %w", pk, sk, name, err)
	}
	return n, nil
}

// setNumber sets number attribute name of item (pk, sk) to n, on condition
// that it is below n (or absent): a step that ran twice does not move back.
// These items (the fold's state, the roll-up's cursors) never expire: a
// state that vanished would start the runs again at 1.
func (l *LSM) setNumber(ctx context.Context, pk, sk, name string, n int64) error {
	_, err := l.Client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 aws.String(l.Table),
		Key:                       key(pk, sk),
		UpdateExpression:          aws.String("SET #n = :n"),
		ConditionExpression:       aws.String("attribute_not_exists(#n) OR #n < :n"),
		ExpressionAttributeNames:  map[string]string{"#n": name},
		ExpressionAttributeValues: map[string]types.AttributeValue{":n": &types.AttributeValueMemberN{Value: strconv.FormatInt(n, 10)}},
	})
	if err != nil && !isCond(err) {
		return fmt.Errorf("set %s %s %s to %d: %w", pk, sk, name, n, err)
	}
	return nil
}

// isCond: err is a refused condition.
func isCond(err error) bool {
	var cond *types.ConditionalCheckFailedException
	return errors.As(err, &cond)
}

// each runs f(0..n-1), Concurrency at a time, and returns the first error.
func (l *LSM) each(n int, f func(int) error) error {
	conc := l.Concurrency
	if conc <= 0 {
		conc = 16
	}
	sem := make(chan struct{}, conc)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			errs[i] = f(i)
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
