package ingest

import (
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"
)

// redeliveries remembers, for each Kinesis shard, the records that the last
// invocation with a failure stored after its first failed record. Lambda
// delivers a shard again from the first failed record, so those records
// come back in the next batch of the shard, which Lambda most often gives
// to the same warm container; writing them again would spend their keys'
// capacity a second time, on the very keys that are throttled. With a
// container that has not seen the shard (or has forgotten it) they are
// written again, which is harmless: items are idempotent, and an unchanged
// item adds no stream record.
//
// The memory is small: a shard's records of one batch (at most 10,000),
// for at most maxShards shards, for at most redeliveryTTL.
type redeliveries struct {
	mu     sync.Mutex
	shards map[string]storedAfter
}

// storedAfter is one shard's memory: the sequence numbers stored after a
// failure, and when.
type storedAfter struct {
	at   time.Time
	seqs map[string]struct{}
}

const (
	// redeliveryTTL bounds how long a shard's memory is trusted: Lambda
	// delivers again within seconds of a failed batch; a memory older than
	// this is of a delivery that has long moved on.
	redeliveryTTL = 10 * time.Minute
	// maxShards bounds the shards remembered: a container serves one
	// shard at a time, and sees a few in its life.
	maxShards = 64
)

// shardKey names a record's shard: its stream and shard id.
func shardKey(rec *events.KinesisEventRecord) string {
	return rec.EventSourceArn + "/" + shardID(rec.EventID)
}

// known reports, for each record, whether the shard's memory holds it as
// stored: it was stored after a failed record of an earlier batch.
func (r *redeliveries) known(recs []events.KinesisEventRecord, now time.Time) (known []bool, n int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.shards) == 0 {
		return nil, 0
	}
	for i := range recs {
		m, ok := r.shards[shardKey(&recs[i])]
		if !ok || now.Sub(m.at) > redeliveryTTL {
			continue
		}
		if _, ok := m.seqs[recs[i].Kinesis.SequenceNumber]; ok {
			if known == nil {
				known = make([]bool, len(recs))
			}
			known[i] = true
			n++
		}
	}
	return known, n
}

// remember replaces the memory of the batch's shards: the records stored
// (done) after each shard's first failed one. A shard with no failure is
// forgotten: Lambda moves past the whole batch.
func (r *redeliveries) remember(recs []events.KinesisEventRecord, done []bool, now time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	failedIn := map[string]bool{}
	for i := range recs {
		k := shardKey(&recs[i])
		if _, seen := failedIn[k]; !seen {
			failedIn[k] = false
			delete(r.shards, k)
		}
		if !done[i] {
			failedIn[k] = true
			continue
		}
		if !failedIn[k] {
			continue
		}
		m, ok := r.shards[k]
		if !ok {
			if r.shards == nil {
				r.shards = map[string]storedAfter{}
			}
			r.evict(now)
			m = storedAfter{at: now, seqs: map[string]struct{}{}}
			r.shards[k] = m
		}
		m.seqs[recs[i].Kinesis.SequenceNumber] = struct{}{}
	}
}

// evict makes room for one more shard: it drops the expired memories, and
// the oldest if that is not enough.
func (r *redeliveries) evict(now time.Time) {
	var oldest string
	for k, m := range r.shards {
		if now.Sub(m.at) > redeliveryTTL {
			delete(r.shards, k)
		} else if oldest == "" || m.at.Before(r.shards[oldest].at) {
			oldest = k
		}
	}
	if len(r.shards) >= maxShards {
		delete(r.shards, oldest)
	}
}
