package heatsim

import (
	"context"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/shardline/shardline/internal/adapt"
	"github.com/shardline/shardline/internal/schema"
	"github.com/shardline/shardline/internal/shardmap"
	"github.com/shardline/shardline/pkg/bucketing"
)

// records is an in-memory stand-in for the table, enough for the shard
// record: items by (pk, sk), conditions not checked.
type records map[[2]string]map[string]types.AttributeValue

func key(m map[string]types.AttributeValue) [2]string {
	return [2]string{m[schema.PK].(*types.AttributeValueMemberS).Value, m[schema.SK].(*types.AttributeValueMemberS).Value}
}

func (r records) GetItem(_ context.Context, in *dynamodb.GetItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	return &dynamodb.GetItemOutput{Item: r[key(in.Key)]}, nil
}

func (r records) PutItem(_ context.Context, in *dynamodb.PutItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	r[key(in.Item)] = in.Item
	return &dynamodb.PutItemOutput{}, nil
}

// TestStepStartIsTheRegistrys: a raise recorded at now takes effect in the
// simulator exactly when the shard record's writers schedule it, and a step
// the record refuses (it would start on the next day) is refused here too.
func TestStepStartIsTheRegistrys(t *testing.T) {
	src := bucketing.Stream{Space: bucketing.Events, Source: "hot"}
	for _, now := range []time.Time{
		time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC),
		time.Date(2026, 11, 22, 10, 0, 30, 0, time.UTC),
		time.Date(2026, 11, 22, 10, 0, 59, 999e6, time.UTC),
		time.Date(2026, 11, 22, 11, 53, 0, 1, time.UTC),
		time.Date(2026, 11, 22, 23, 51, 59, 0, time.UTC),
		time.Date(2026, 11, 22, 23, 52, 0, 0, time.UTC),
		time.Date(2026, 11, 22, 23, 59, 0, 0, time.UTC),
	} {
		day := bucketing.Day(now)
		db := records{}
		reg := func(n, g int) *shardmap.Registry {
			return &shardmap.Registry{Client: db, Table: "t", Now: func() time.Time { return now },
				Config: shardmap.Config{Shards: bucketing.Counts{Default: n}, GSIShards: bucketing.Counts{Default: g}, Retention: time.Hour}}
		}
		if _, err := reg(4, 1).Schedule(context.Background(), src, day); err != nil {
			t.Fatal(err)
		}
		s, err := reg(8, 2).Schedule(context.Background(), src, day)
		if err != nil {
			t.Fatal(err)
		}
		from := StepStart(now)
		if bucketing.Day(from) != day {
			if len(s) != 1 {
				t.Errorf("at %v the registry recorded %+v; the simulator refuses a step on %s", now, s, bucketing.Day(from))
			}
			continue
		}
		if len(s) != 2 || s[1].From != from.Hour()*60+from.Minute() {
			t.Errorf("at %v the registry recorded %+v; the simulator starts the step at %v", now, s, from)
		}
	}
}

// TestAdaptiveDefaultsAndQuietSource: the floor is ingest's default counts,
// and a source that stays quiet is never raised: its page costs one query.
func TestAdaptiveDefaultsAndQuietSource(t *testing.T) {
	d := AdaptiveDesign(Adaptive{})
	if d.Name != "shardline, adaptive from 4/1" || d.Adapt.Floor != (adapt.Counts{Shards: 4, GSIShards: 1}) {
		t.Fatalf("design %q, floor %+v", d.Name, d.Adapt.Floor)
	}
	w := Workload{Sources: []Source{{Name: "quiet", Rate: 200}}, Duration: 5 * time.Minute, Start: start, ItemKB: 1}
	r := Run(w, []Design{d}, 0)[0]
	if len(r.Raises) != 0 || r.ThrottledPct != 0 || r.ReadRequests != 1 {
		t.Fatalf("a quiet source: %+v", r)
	}
}

// TestRaisesFollowTheRecord: every raise takes effect at StepStart of its
// recording, in a later minute than the one before, on the same day, and
// counts never fall; the keys written follow the counts in effect.
func TestRaisesFollowTheRecord(t *testing.T) {
	for _, exp := range []bool{false, true} {
		for _, writers := range []int{1, 8} {
			r := ramp(exp, "as written", writers)
			if len(r.Raises) == 0 {
				t.Fatalf("exponential %v, %d writers: no raise", exp, writers)
			}
			prev := Raise{Shards: 4, GSI: 1}
			for i, x := range r.Raises {
				if !x.From.Equal(StepStart(x.Recorded)) || bucketing.Day(x.From) != bucketing.Day(x.Recorded) {
					t.Errorf("raise %d %+v: effective %v, want %v", i, x, x.From, StepStart(x.Recorded))
				}
				if i > 0 && !x.From.After(prev.From) || x.Shards < prev.Shards || x.GSI < prev.GSI ||
					(x.Shards == prev.Shards && x.GSI == prev.GSI) || x.GSI > adapt.DefaultMax || x.Shards > adapt.DefaultMax {
					t.Errorf("raise %d %+v after %+v", i, x, prev)
				}
				prev = x
			}
		}
	}
}

// TestWritersSplitTheRate: each writer sees 1/W of the source's items, and
// the items add up.
func TestWritersSplitTheRate(t *testing.T) {
	var seen []*recorder
	st := newAdaptive(Adaptive{Writers: 3, NewPolicy: func() Policy { r := &recorder{}; seen = append(seen, r); return r }})
	st.observe("s", start, 1000, 1, 0.5)
	total := 0
	for _, r := range seen {
		if r.s.Items < 333 || r.s.Items > 334 || r.s.Throttled < 166 || r.s.Throttled > 167 || r.s.WCU != float64(r.s.Items) {
			t.Errorf("a writer saw %+v", r.s)
		}
		total += r.s.Items
	}
	if len(seen) != 3 || total != 1000 {
		t.Fatalf("%d writers saw %d items", len(seen), total)
	}
}

type recorder struct{ s adapt.Sample }

func (r *recorder) Observe(_ string, _ time.Time, _ adapt.Counts, s adapt.Sample) { r.s = s }
func (r *recorder) Decide(string, time.Time, adapt.Counts, adapt.Counts) (adapt.Decision, bool) {
	return adapt.Decision{}, false
}
