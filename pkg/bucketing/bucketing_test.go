package bucketing

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"testing"
	"testing/quick"
	"time"
	"unicode/utf8"
)

// awkward are sources and ids that a naive delimiter scheme confuses.
var awkward = []string{"a", "a#b", "a%23b", "a%b", "%", "#", "##", "%25", "a b", "a/b", "ü", "日本#語", "a#", "#a", "E#x", "Q", "x#2026-01-01#0"}

func TestEscapeRoundTripAndNoHash(t *testing.T) {
	f := func(s string) bool {
		e := Escape(s)
		u, err := Unescape(e)
		return err == nil && u == s && !bytes.ContainsRune([]byte(e), '#')
	}
	if err := quick.Check(f, &quick.Config{MaxCount: 5000}); err != nil {
		t.Fatal(err)
	}
	for _, s := range awkward {
		if !f(s) {
			t.Errorf("round trip of %q failed", s)
		}
	}
}

func TestUnescapeRejectsWhatEscapeCannotProduce(t *testing.T) {
	for _, s := range []string{"a#b", "%", "%2", "%24", "%zz", "a%"} {
		if _, err := Unescape(s); !errors.Is(err, ErrKey) {
			t.Errorf("Unescape(%q) = %v, want ErrKey", s, err)
		}
	}
}

// TestKeysInjective writes many (source, id, time) triples, including ones
// built to collide under naive concatenation, and checks that no two map to
// the same (pk, sk) or the same (gpk, sk).
func TestKeysInjective(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	base := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	type triple struct {
		src, id string
		t       time.Time
	}
	var in []triple
	for _, s := range awkward {
		for _, id := range awkward {
			in = append(in, triple{s, id, base}, triple{s, id, base.Add(time.Nanosecond)})
		}
	}
	for range 20000 {
		in = append(in, triple{randString(r, 4), randString(r, 4), base.Add(time.Duration(r.IntN(3)) * time.Hour)})
	}
	baseKeys := map[[2]string]triple{}
	gsiKeys := map[[2]string]triple{}
	dayKeys := map[[2]string]triple{}
	for _, x := range in {
		h := Hash(x.src, x.id)
		k := [2]string{Stream{Events, x.src}.PK(Day(x.t), Shard(h, 8)), SortKey(x.t, x.id)}
		g := [2]string{GSIPK(x.src, Hour(x.t), GSIShard(h, 4)), SortKey(x.t, x.id)}
		gd := [2]string{GSIPK(x.src, Day(x.t), GSIShard(h, 4)), SortKey(x.t, x.id)}
		if prev, ok := dayKeys[gd]; ok && prev != x {
			t.Fatalf("GSI day key collision: %+v and %+v both map to %q", prev, x, gd)
		}
		if _, ok := gsiKeys[gd]; ok {
			t.Fatalf("GSI day key %q is also an hour key", gd)
		}
		dayKeys[gd] = x
		if prev, ok := baseKeys[k]; ok && prev != x {
			t.Fatalf("base key collision: %+v and %+v both map to %q", prev, x, k)
		}
		if prev, ok := gsiKeys[g]; ok && prev != x {
			t.Fatalf("GSI key collision: %+v and %+v both map to %q", prev, x, g)
		}
		baseKeys[k], gsiKeys[g] = x, x
	}
}

func TestPartitionKeyRoundTrip(t *testing.T) {
	f := func(src string, day uint16, shard uint16) bool {
		if src == "" {
			src = "x"
		}
		d := time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC).AddDate(0, 0, int(day%4000)).Format(DayLayout)
		n := int(shard) % MaxShards
		for _, k := range []PartitionKey{{Stream{Events, src}, d, n}, {Stream{Space: Quarantine}, d, n}} {
			got, err := ParsePK(k.String())
			if err != nil || got != k {
				t.Logf("ParsePK(%q) = %+v, %v; want %+v", k.String(), got, err, k)
				return false
			}
		}
		for _, g := range []GSIKey{{Source: src, Bucket: d + "T07", Shard: n}, {Source: src, Bucket: d, Shard: n}} {
			got, err := ParseGSIPK(g.String())
			if err != nil || got != g {
				t.Logf("ParseGSIPK(%q) = %+v, %v; want %+v", g.String(), got, err, g)
				return false
			}
		}
		return true
	}
	if err := quick.Check(f, &quick.Config{MaxCount: 3000}); err != nil {
		t.Fatal(err)
	}
}

func TestParsePKRejectsForgeries(t *testing.T) {
	for _, s := range []string{"", "E", "E#a#2026-11-22", "E##2026-11-22#0", "E#a#b#2026-11-22#0", "E#a#2026-11-22#007",
		"E#a#2026-11-22#-1", "E#a#2026-13-01#0", "E#a#2026-11-22#1024", "Q#x#2026-11-22#0", "M#E#a#2026-11-22", "E#a%#2026-11-22#0"} {
		if _, err := ParsePK(s); !errors.Is(err, ErrKey) {
			t.Errorf("ParsePK(%q) = %v, want ErrKey", s, err)
		}
	}
}

// TestSpacesDisjoint: no source can make a key that parses as another
// space's key or another source's.
func TestSpacesDisjoint(t *testing.T) {
	for _, src := range awkward {
		ev := Stream{Events, src}
		pk := ev.PK("2026-11-22", 3)
		got, err := ParsePK(pk)
		if err != nil || got.Space != Events || got.Source != src {
			t.Errorf("event key %q parsed as %+v, %v", pk, got, err)
		}
		if meta := ev.MetaPK("2026-11-22"); meta == (Stream{Space: Quarantine}).MetaPK("2026-11-22") {
			t.Errorf("source %q shares the quarantine's meta key %q", src, meta)
		}
	}
}

func TestSortKeyOrderIsTimeThenIDBytewise(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	base := time.Date(2026, 11, 22, 23, 59, 59, 0, time.UTC)
	type ev struct {
		t  time.Time
		id string
	}
	var evs []ev
	for range 5000 {
		// few distinct times so that ties on time are common
		evs = append(evs, ev{base.Add(time.Duration(r.IntN(5)-2) * time.Duration(r.Int64N(int64(time.Second)))), randString(r, 6)})
	}
	evs = append(evs, ev{base, "#"}, ev{base, "$"}, ev{base, "%"}, ev{base, ""}, ev{base, "\U0010FFFF"}, ev{base, "\x7f"})
	byKey := append([]ev(nil), evs...)
	sort.Slice(byKey, func(i, j int) bool { return SortKey(byKey[i].t, byKey[i].id) < SortKey(byKey[j].t, byKey[j].id) })
	byValue := append([]ev(nil), evs...)
	sort.Slice(byValue, func(i, j int) bool {
		if !byValue[i].t.Equal(byValue[j].t) {
			return byValue[i].t.Before(byValue[j].t)
		}
		return byValue[i].id < byValue[j].id
	})
	for i := range byKey {
		if !byKey[i].t.Equal(byValue[i].t) || byKey[i].id != byValue[i].id {
			t.Fatalf("position %d: key order has %+v, (time, id) order has %+v", i, byKey[i], byValue[i])
		}
	}
}

func TestSortKeyFixedWidthAndRoundTrip(t *testing.T) {
	for _, tm := range []time.Time{
		time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC),
		time.Date(2026, 1, 2, 3, 4, 5, 1, time.UTC),
		time.Date(2026, 1, 2, 3, 4, 5, 999999999, time.FixedZone("x", 5*3600)),
	} {
		for _, id := range awkward {
			sk := SortKey(tm, id)
			if sk[len(TimeLayout)] != '#' {
				t.Fatalf("sort key %q: time is not %d bytes", sk, len(TimeLayout))
			}
			gt, gid, err := ParseSortKey(sk)
			if err != nil || !gt.Equal(tm) || gid != id {
				t.Fatalf("ParseSortKey(%q) = %v, %q, %v", sk, gt, gid, err)
			}
		}
	}
}

// TestHashGolden pins the shard hash: it is part of the storage format, and
// changing it would send retries of stored events to other shards. The values
// were computed independently with hash/fnv and the MurmurHash3 finaliser.
func TestHashGolden(t *testing.T) {
	golden := []struct {
		src, id string
		want    uint64
	}{
		{"orders", "o-1", 0x1e718704b3639d75},
		{"", "", 0xb9034ad37056f5fb},
		{"a", "bc", 0x5f6fd10717e095c5},
		{"ab", "c", 0x75f621e17571402c},
	}
	for _, g := range golden {
		if got := Hash(g.src, g.id); got != g.want {
			t.Errorf("Hash(%q, %q) = %#016x, want %#016x", g.src, g.id, got, g.want)
		}
	}
}

func TestShardDeterministicAndInRange(t *testing.T) {
	f := func(src, id string, n uint16) bool {
		k := int(n)%MaxShards + 1
		h := Hash(src, id)
		s, g := Shard(h, k), GSIShard(h, k)
		return h == Hash(src, id) && s >= 0 && s < k && g >= 0 && g < k && s == Shard(Hash(src, id), k)
	}
	if err := quick.Check(f, &quick.Config{MaxCount: 5000}); err != nil {
		t.Fatal(err)
	}
}

// TestShardSpread: sequential ids, the worst case for a weak hash, spread
// evenly over the shards and independently over the GSI shards.
func TestShardSpread(t *testing.T) {
	for _, n := range []int{2, 4, 7, 16, 64} {
		counts := make([]int, n)
		joint := map[[2]int]int{}
		const events = 64000
		for i := range events {
			h := Hash("sensors", "evt-"+itoa(i))
			counts[Shard(h, n)]++
			joint[[2]int{Shard(h, n), GSIShard(h, 4)}]++
		}
		mean := float64(events) / float64(n)
		for s, c := range counts {
			if r := float64(c) / mean; r > 1.1 || r < 0.9 {
				t.Errorf("n=%d shard %d holds %d events, %.3f of the mean", n, s, c, r)
			}
		}
		if len(joint) != n*4 {
			t.Errorf("n=%d: only %d of %d (shard, gsi shard) pairs used: the two are correlated", n, len(joint), n*4)
		}
	}
}

func TestCounts(t *testing.T) {
	m, err := ParseOverrides(`{"hot,source=1": 32, "b": 2}`)
	if err != nil {
		t.Fatal(err)
	}
	c := Counts{Default: 4, Overrides: m}
	if c.For("hot,source=1") != 32 || c.For("b") != 2 || c.For("other") != 4 {
		t.Fatalf("Counts.For gave the wrong counts: %+v", c)
	}
	for _, bad := range []string{`{"a": 0}`, `{"a": 5000}`, `a=3`, `{"a": "3"}`} {
		if _, err := ParseOverrides(bad); err == nil {
			t.Errorf("ParseOverrides(%q) accepted", bad)
		}
	}
	if m, err := ParseOverrides(" "); err != nil || m != nil {
		t.Errorf("ParseOverrides(blank) = %v, %v", m, err)
	}
}

func TestShardsFor(t *testing.T) {
	cases := []struct {
		peak, kb float64
		want     int
	}{
		{0, 1, 1},
		{100, 1, 1},
		{700, 1, 1},
		{701, 1, 2},
		{5000, 1, 8},    // seed: 5 minimum; 10 suggested
		{50000, 1, 72},  // seed: 50 minimum; 60-70 suggested
		{5000, 2.5, 22}, // 3 WCU per item
		{1000, 0.2, 2},  // any item costs at least 1 WCU
		{1e9, 1, 1024},  // capped
	}
	for _, c := range cases {
		if got := ShardsFor(c.peak, c.kb); got != c.want {
			t.Errorf("ShardsFor(%v, %v) = %d, want %d", c.peak, c.kb, got, c.want)
		}
	}
	// The result always keeps each shard under the partition ceiling.
	f := func(peak uint32, kb uint8) bool {
		n := ShardsFor(float64(peak), float64(kb))
		perShard := float64(peak) * max(1, float64(kb)) / float64(n)
		return n == MaxShards || perShard <= PartitionWCU*TargetUtilisation+1e-9
	}
	if err := quick.Check(f, nil); err != nil {
		t.Fatal(err)
	}
}

func TestSchedule(t *testing.T) {
	s := Schedule{{From: 0, Shards: 4, GSIShards: 1}, {From: 600, Shards: 16, GSIShards: 2}}
	if err := s.Validate(); err != nil {
		t.Fatal(err)
	}
	day := time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC)
	if got := s.At(day.Add(9*time.Hour + 59*time.Minute + 59*time.Second)); got.Shards != 4 {
		t.Errorf("09:59:59 uses %d shards, want 4", got.Shards)
	}
	if got := s.At(day.Add(10 * time.Hour)); got.Shards != 16 || got.GSIShards != 2 {
		t.Errorf("10:00 uses %+v, want 16/2", got)
	}
	if s.MaxShards() != 16 || s.MaxGSIShards() != 2 || s.Last().From != 600 {
		t.Errorf("max/last wrong for %+v", s)
	}
	step := func(from, n, g int) Step { return Step{From: from, Shards: n, GSIShards: g} }
	daily := step(0, 1, 1)
	daily.DayBucket = true
	if err := (Schedule{daily, {From: 60, Shards: 2, GSIShards: 1, DayBucket: true}}).Validate(); err != nil {
		t.Errorf("a day-bucket schedule: %v", err)
	}
	for _, bad := range []Schedule{nil, {step(5, 1, 1)}, {step(0, 1, 1), step(0, 2, 1)}, {step(0, 0, 1)}, {step(0, 1, 1), step(1440, 2, 1)},
		{daily, step(60, 2, 1)}} {
		if bad.Validate() == nil {
			t.Errorf("Validate(%+v) accepted", bad)
		}
	}
}

func randString(r *rand.Rand, maxLen int) string {
	const alphabet = "ab#%/ ü日\x00"
	var b []byte
	for range r.IntN(maxLen + 1) {
		b = append(b, alphabet[r.IntN(len(alphabet))])
	}
	if !utf8.Valid(b) { // the alphabet slices multibyte runes; keep valid strings mostly
		return string([]rune(string(b)))
	}
	return string(b)
}

func itoa(i int) string {
	var b [20]byte
	n := len(b)
	for {
		n--
		b[n] = byte('0' + i%10)
		i /= 10
		if i == 0 {
			return string(b[n:])
		}
	}
}

// TestAppendMatchesString: the allocation-free builders write exactly the
// keys of the string functions.
func TestAppendMatchesString(t *testing.T) {
	f := func(src, id string, ns int64, n uint8) bool {
		at := time.Unix(0, ns%(1<<62)).In(time.FixedZone("z", 3600))
		s := Stream{Space: Events, Source: src}
		q := Stream{Space: Quarantine}
		return string(s.AppendPK([]byte("x"), at, int(n)))[1:] == s.PK(Day(at), int(n)) &&
			string(q.AppendPK(nil, at, int(n))) == q.PK(Day(at), int(n)) &&
			string(AppendGSIPK(nil, src, at, false, int(n))) == GSIPK(src, Hour(at), int(n)) &&
			string(AppendGSIPK(nil, src, at, true, int(n))) == GSIPK(src, Day(at), int(n)) &&
			GSIBucket(at, true) == Day(at) && GSIBucket(at, false) == Hour(at) &&
			string(AppendSortKey(nil, at, id)) == SortKey(at, id) &&
			FormatTime(at) == at.UTC().Format(TimeLayout)
	}
	if err := quick.Check(f, &quick.Config{MaxCount: 3000}); err != nil {
		t.Fatal(err)
	}
}

func TestCounterSlices(t *testing.T) {
	at := time.Date(2026, 11, 22, 11, 19, 59, 999_999_999, time.UTC)
	if got := CounterSK(at); got != "2026-11-22T11:10" {
		t.Errorf("CounterSK(%v) = %q, want 2026-11-22T11:10", at, got)
	}
	if got := CounterSK(at.Add(time.Nanosecond)); got != "2026-11-22T11:20" {
		t.Errorf("CounterSK(11:20) = %q", got)
	}
	// An hour's own key (items from before slices) and its slices sort
	// inside the range; the next hour's do not.
	lo, hi := CounterSKRange(time.Date(2026, 11, 22, 11, 30, 0, 0, time.UTC), time.Date(2026, 11, 22, 13, 0, 0, 0, time.UTC))
	for _, sk := range []string{"2026-11-22T11", "2026-11-22T11:00", "2026-11-22T11:50", "2026-11-22T12", "2026-11-22T12:50"} {
		if sk < lo || sk > hi {
			t.Errorf("%q outside [%q, %q]", sk, lo, hi)
		}
	}
	for _, sk := range []string{"2026-11-22T10:50", "2026-11-22T13", "2026-11-22T13:00"} {
		if sk >= lo && sk <= hi {
			t.Errorf("%q inside [%q, %q]", sk, lo, hi)
		}
	}
	for sk, want := range map[string]string{"2026-11-22T11": "11:00", "2026-11-22T11:40": "11:40"} {
		hour, start, err := CounterSliceTime(sk)
		if err != nil || hour.Format("15:04") != "11:00" || start.Format("15:04") != want {
			t.Errorf("CounterSliceTime(%q) = %v, %v, %v; want 11:00, %s", sk, hour, start, err, want)
		}
	}
	for _, bad := range []string{"", "2026-11-22", "2026-11-22T11:", "2026-11-22T11:5", "2026-11-22T11:15", "2026-11-22T11:60", "2026-11-22T11:1x"} {
		if _, _, err := CounterSliceTime(bad); err == nil {
			t.Errorf("CounterSliceTime(%q) accepted", bad)
		}
	}
}

func TestCounterAndCatalogKeys(t *testing.T) {
	for _, src := range []string{"a", "a#b", "a%23b", "%", "#", "ü/x y"} {
		pk := CounterPK(src)
		if strings.Count(pk, "#") != 1 {
			t.Errorf("CounterPK(%q) = %q holds a delimiter", src, pk)
		}
		got, err := ParseCounterPK(pk)
		if err != nil || got != src {
			t.Errorf("ParseCounterPK(%q) = %q, %v; want %q", pk, got, err, src)
		}
	}
	if CounterPK("a#b") == CounterPK("a%23b") {
		t.Error("two sources share a counter partition")
	}
	for _, bad := range []string{"C#", "E#a", "C#a#b", "C#%zz"} {
		if _, err := ParseCounterPK(bad); err == nil {
			t.Errorf("ParseCounterPK(%q) accepted", bad)
		}
	}
	for shard := range CatalogShards {
		if d, n, err := ParseCatalogPK(CatalogPK("2026-11-22", shard)); err != nil || d != "2026-11-22" || n != shard {
			t.Errorf("catalog key of shard %d: %q %d %v", shard, d, n, err)
		}
	}
	if d, n, err := ParseCatalogPK(LegacyCatalogPK("2026-11-22")); err != nil || d != "2026-11-22" || n != -1 {
		t.Errorf("legacy catalog key: %q %d %v", d, n, err)
	}
	for _, bad := range []string{"S#", "S#2026-13-01", "M#2026-11-22", "S#2026-11-22x", "S#2026-11-22#", "S#2026-11-22#16",
		"S#2026-11-22#-1", "S#2026-11-22#01", "S#2026-11-22#1#2"} {
		if _, _, err := ParseCatalogPK(bad); err == nil {
			t.Errorf("ParseCatalogPK(%q) accepted", bad)
		}
	}
}

// TestCatalogShardSpreadsSources: the catalogue shard depends on the
// source alone, and 100,000 sources (the scale of a midnight start) fill
// every shard within 3 % of an even share, so that no catalogue key takes
// much more than its sixteenth.
func TestCatalogShardSpreadsSources(t *testing.T) {
	const n = 100_000
	var per [CatalogShards]int
	for i := range n {
		src := fmt.Sprintf("svc-%d.example", i)
		s := CatalogShard(src)
		if s != CatalogShard(src) || s < 0 || s >= CatalogShards {
			t.Fatalf("CatalogShard(%q) = %d", src, s)
		}
		per[s]++
	}
	for s, c := range per {
		if even := n / CatalogShards; c < even*97/100 || c > even*103/100 {
			t.Errorf("shard %d holds %d of %d sources, want %d within 3%%", s, c, n, even)
		}
	}
}
