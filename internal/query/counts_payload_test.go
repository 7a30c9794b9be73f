package query

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/shardline/shardline/internal/counts"
	"github.com/shardline/shardline/internal/ingest"
	"github.com/shardline/shardline/local/ddbstreams"
	"github.com/shardline/shardline/ops/sourcecounter"
	"github.com/shardline/shardline/testkit/testddb"
)

// manyTypes are the types of the source of TestCountsFitLambdaPayload:
// 160 of them, a few long and made of the characters that grow most when
// escaped twice (a " is 4 bytes in the payload, a < 7).
func manyTypes() []string {
	var out []string
	for i := range 160 {
		switch i % 40 {
		case 0:
			out = append(out, fmt.Sprintf("%03d", i)+strings.Repeat(`<"\`, 84))
		case 1:
			out = append(out, fmt.Sprintf("%03d", i)+strings.Repeat("\u2028\x01", 60))
		default:
			out = append(out, fmt.Sprintf("type.%03d", i))
		}
	}
	return out
}

// TestCountsFitLambdaPayload: the explorer's request, GET /v1/counts by
// type over 24 hours at 1 minute, for a source of 160 types (9.7 MB
// before; a series is about 66 KB at 1,440 points) through the real query
// handler, as the Lambda runtime encodes its answer: the payload fits 6 MB,
// lists the types with most events (bytewise), and sums the others in the
// "other" series, so that every bucket still adds up to the source's
// count.
func TestCountsFitLambdaPayload(t *testing.T) {
	t.Parallel() // its own table (or the shared corpus, read only); it waits on DynamoDB Local more than on the CPU
	table := testddb.StreamTable(t)
	client := testddb.Client(t, testddb.Endpoint(t))
	in := ingest.New(ingest.DefaultConfig(table), client, ingest.Options{Now: func() time.Time { return now }})
	typs := manyTypes()
	totals := map[string]int{}
	var k events.KinesisEvent
	for i, typ := range typs {
		for j := range 1 + i%4 { // 1 to 4 events a type, over the day
			at := now.Add(-time.Duration(1+(i*37+j*311)%1430) * time.Minute)
			b, _ := json.Marshal(map[string]any{"id": fmt.Sprint(i, "-", j), "source": "many", "type": typ, "time": at.Format(time.RFC3339)})
			k.Records = append(k.Records, events.KinesisEventRecord{EventSource: "aws:kinesis", Kinesis: events.KinesisRecord{Data: b, SequenceNumber: fmt.Sprint(len(k.Records))}})
			totals[typ]++
		}
	}
	if resp, err := in.Kinesis(loading(t), k); err != nil || len(resp.BatchItemFailures) > 0 {
		t.Fatalf("ingest: %v %v", err, resp.BatchItemFailures)
	}
	arn, err := ddbstreams.StreamARN(context.Background(), client, table)
	if err != nil {
		t.Fatal(err)
	}
	recs, err := ddbstreams.Read(context.Background(), ddbstreams.Static(testddb.Endpoint(t)), arn)
	if err != nil {
		t.Fatal(err)
	}
	c := &sourcecounter.Counter{Client: client, Table: table, Retention: 30 * 24 * time.Hour}
	for shard, rs := range recs {
		if _, err := c.Apply(context.Background(), shard, rs); err != nil {
			t.Fatal(err)
		}
	}
	h := handlerFor(t, table, testddb.Endpoint(t))
	q := url.Values{"source": {"many"}, "from": {now.Add(-24 * time.Hour).Format(time.RFC3339)}, "to": {now.Format(time.RFC3339)}, "group_by": {"type"}}
	payload, resp := invoke(t, h, CountsRoute, q)
	var byType counts.Response
	if resp.StatusCode != 200 || json.Unmarshal([]byte(resp.Body), &byType) != nil {
		t.Fatalf("%d %.300s", resp.StatusCode, resp.Body)
	}
	t.Logf("%d types: %d series, payload %d bytes", len(typs), len(byType.Series), len(payload))
	if len(payload) > lambdaLimit || len(payload) < lambdaLimit-lambdaLimit/10 {
		t.Fatalf("the payload is %d bytes; want at most %d, and within 10%% of it (the series that fit)", len(payload), lambdaLimit)
	}
	n := len(byType.Series)
	other := byType.Series[n-1]
	named := byType.Series[:n-1]
	if byType.Interval != "1m" || other.Other == nil || other.Other.Overflow || other.Other.Types+len(named) != len(typs) {
		t.Fatalf("interval %s, %d series, the last %+v; want 1m, and the other series of the %d types not listed", byType.Interval, n, other.Other, len(typs)-len(named))
	}
	listed := map[string]bool{}
	for i, s := range named {
		if i > 0 && named[i-1].Type >= s.Type {
			t.Fatalf("series %q after %q: want them bytewise by type", s.Type, named[i-1].Type)
		}
		listed[s.Type] = true
	}
	var leastListed, mostLeft int
	leastListed = 1 << 30
	for typ, n := range totals {
		if listed[typ] {
			leastListed = min(leastListed, n)
		} else {
			mostLeft = max(mostLeft, n)
		}
	}
	if mostLeft > leastListed {
		t.Errorf("a type of %d events left out, one of %d listed: want the types with most events", mostLeft, leastListed)
	}

	delete(q, "group_by")
	_, resp = invoke(t, h, CountsRoute, q)
	var all counts.Response
	if err := json.Unmarshal([]byte(resp.Body), &all); err != nil || len(all.Series) != 1 {
		t.Fatalf("%v %.300s", err, resp.Body)
	}
	sums := make([]int64, len(all.Series[0].Points))
	for _, s := range byType.Series {
		for i, p := range s.Points {
			sums[i] += p.Count
		}
	}
	total := 0
	for i, p := range all.Series[0].Points {
		if sums[i] != p.Count {
			t.Fatalf("at %s the series add up to %d; the source has %d events", p.T, sums[i], p.Count)
		}
		total += int(p.Count)
	}
	if want := sumOf(totals); total != want {
		t.Fatalf("%d events counted, %d sent", total, want)
	}
}

func sumOf(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}
