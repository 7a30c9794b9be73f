package producer

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/kinesis"

	"github.com/shardline/shardline/local/kinesislocal"
	"github.com/shardline/shardline/local/kinesisread"
	"github.com/shardline/shardline/testkit/testkinesis"
)

// TestRequestValidationIsolated: when Kinesis refuses a whole PutRecords
// request for some of its records (a ValidationException naming
// records.N), only those records fail, each with the reason, and the
// others are stored at once. Put's own checks keep such records out of
// batches, so the batch is built here, past them, and sent to kinesalite,
// which refuses it as Kinesis does.
func TestRequestValidationIsolated(t *testing.T) {
	arn, err := kinesisread.ParseARN(testkinesis.Stream(t, 1))
	if err != nil {
		t.Fatal(err)
	}
	c := kinesislocal.Client(testkinesis.Endpoint(t))
	c = kinesis.New(c.Options(), func(o *kinesis.Options) { o.RetryMaxAttempts = 1 })
	var mu sync.Mutex
	stored, failed := map[string]string{}, map[string]error{}
	k := NewKinesis(c, arn.Name, WithLinger(time.Hour), WithRetries(3, time.Millisecond, time.Millisecond), WithOnResult(func(o Outcome) {
		mu.Lock()
		defer mu.Unlock()
		if o.Err != nil {
			failed[o.ID] = o.Err
			return
		}
		stored[o.ID] = o.SequenceNumber
	}))
	defer k.Close(t.Context())

	var recs []*record
	bad := map[int]bool{7: true, 50: true, 51: true, 99: true}
	for i := range 100 {
		id := fmt.Sprintf("e-%03d", i)
		key := id
		if bad[i] {
			key = strings.Repeat("k", 257)
		}
		recs = append(recs, &record{data: []byte(`{"id":"` + id + `"}`), key: key, events: []event{{id: id}}})
	}
	k.send(recs)

	if len(stored) != 96 || len(failed) != 4 {
		t.Fatalf("stored %d, failed %d; want 96 and 4", len(stored), len(failed))
	}
	for i := range bad {
		err := failed[fmt.Sprintf("e-%03d", i)]
		if err == nil || !strings.Contains(err.Error(), "partition key") || !strings.Contains(err.Error(), "ValidationException") {
			t.Errorf("e-%03d: %v; want the refusal of its partition key", i, err)
		}
	}
	for id, seq := range stored {
		if seq == "" {
			t.Errorf("%s: stored without a sequence number", id)
		}
	}
	if s := k.Stats(); s.Requests != 2 || s.Retried != 0 {
		t.Fatalf("stats %+v: want the refused request and one of the 96 others", s)
	}
}
