package kpl

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/shardline/shardline/testkit/kpltest"
)

// TestAwslabsNodeAggregates decodes aggregates made by the awslabs Node
// aggregator (testdata/gen-fixtures.js) back into the records it was given.
func TestAwslabsNodeAggregates(t *testing.T) {
	b, err := os.ReadFile("testdata/awslabs-node.json")
	if err != nil {
		t.Fatal(err)
	}
	var cases []struct {
		Name    string
		Records []struct {
			PartitionKey    string `json:"partition_key"`
			ExplicitHashKey string `json:"explicit_hash_key"`
			Data            []byte `json:"data"`
		}
		Aggregate []byte
	}
	if err := json.Unmarshal(b, &cases); err != nil {
		t.Fatal(err)
	}
	if len(cases) < 3 {
		t.Fatalf("%d cases in the fixture", len(cases))
	}
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			if !IsAggregate(c.Aggregate) {
				t.Fatal("not recognised as an aggregate")
			}
			got, err := Deaggregate(c.Aggregate, 0)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(c.Records) {
				t.Fatalf("%d records, want %d", len(got), len(c.Records))
			}
			for i, want := range c.Records {
				g := got[i]
				if g.PartitionKey != want.PartitionKey || g.ExplicitHashKey != want.ExplicitHashKey || !bytes.Equal(g.Data, want.Data) {
					t.Fatalf("record %d: got (%q, %q, %q), want (%q, %q, %q)", i,
						g.PartitionKey, g.ExplicitHashKey, g.Data, want.PartitionKey, want.ExplicitHashKey, want.Data)
				}
			}
		})
	}
}

// TestProtobufEncoderRoundTrip decodes aggregates encoded by the protobuf
// library (kpltest), with tags and a field from a newer producer, of the
// sizes the ingest tests use.
func TestProtobufEncoderRoundTrip(t *testing.T) {
	for _, n := range []int{1, 2, 500, 1000} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			recs := make([]kpltest.Record, n)
			for i := range recs {
				recs[i] = kpltest.Record{PartitionKey: fmt.Sprintf("pk-%d", i%150), Data: []byte(fmt.Sprintf(`{"n":%d}`, i))}
				if i%3 == 0 {
					recs[i].ExplicitHashKey = fmt.Sprintf("%d", i%7)
				}
				if i%5 == 0 {
					recs[i].Tags = [][2]string{{"k", "v"}, {"only-key", ""}}
				}
			}
			for name, data := range map[string][]byte{
				"plain":         kpltest.Aggregate(recs),
				"unknown field": kpltest.Wrap(kpltest.WithUnknownField(kpltest.Protobuf(recs))),
			} {
				got, err := Deaggregate(data, 0)
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				if len(got) != n {
					t.Fatalf("%s: %d records, want %d", name, len(got), n)
				}
				for i, r := range recs {
					if got[i].PartitionKey != r.PartitionKey || got[i].ExplicitHashKey != r.ExplicitHashKey || !bytes.Equal(got[i].Data, r.Data) {
						t.Fatalf("%s: record %d: %+v, want %+v", name, i, got[i], r)
					}
				}
			}
		})
	}
}

// wrap frames protobuf bytes with the magic bytes and their digest.
func wrap(pb []byte) []byte { return kpltest.Wrap(pb) }

// record is a Record message's bytes.
func record(pkIndex uint64, data string) []byte {
	b := protowire.AppendTag(nil, 1, protowire.VarintType)
	b = protowire.AppendVarint(b, pkIndex)
	b = protowire.AppendTag(b, 3, protowire.BytesType)
	return protowire.AppendString(b, data)
}

// withRecords is an AggregatedRecord of one partition key and recs.
func withRecords(recs ...[]byte) []byte {
	b := protowire.AppendTag(nil, 1, protowire.BytesType)
	b = protowire.AppendString(b, "pk")
	for _, r := range recs {
		b = protowire.AppendTag(b, 3, protowire.BytesType)
		b = protowire.AppendBytes(b, r)
	}
	return b
}

// TestCorruptAggregates: each way an aggregate can be broken is an error
// that begins "kpl: " and says what is wrong.
func TestCorruptAggregates(t *testing.T) {
	good := kpltest.Aggregate([]kpltest.Record{{PartitionKey: "a", Data: []byte("x")}, {PartitionKey: "b", Data: []byte("y")}})
	flipped := append([]byte{}, good...)
	flipped[len(flipped)-1] ^= 1
	flippedBody := append([]byte{}, good...)
	flippedBody[6] ^= 1
	noPK := protowire.AppendTag(nil, 3, protowire.BytesType)
	noPK = protowire.AppendString(noPK, "data")
	wrongType := protowire.AppendTag(nil, 3, protowire.VarintType)
	wrongType = protowire.AppendVarint(wrongType, 7)
	withEHK := protowire.AppendTag(record(0, "d"), 2, protowire.VarintType)
	withEHK = protowire.AppendVarint(withEHK, 0)
	cases := []struct {
		name, data, want string
	}{
		{"magic only", string(kpltest.Magic), "is 4 bytes; an aggregate is at least 20"},
		{"shorter than a digest", string(kpltest.Magic) + "0123456789", "is 14 bytes"},
		{"digest mismatch", string(flipped), "MD5 digest does not match"},
		{"body changed", string(flippedBody), "MD5 digest does not match"},
		{"truncated", string(good[:len(good)-5]), "MD5 digest does not match"},
		{"garbage protobuf", string(wrap([]byte("\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff"))), "bad protobuf"},
		{"truncated protobuf", string(wrap(withRecords(record(0, "abc"))[:12])), "bad protobuf"},
		{"empty protobuf", string(wrap(nil)), "holds no records"},
		{"tables only", string(wrap(withRecords())), "holds no records"},
		{"wrong wire type", string(wrap(wrongType)), "field 3 at byte 0 has wire type 0, want 2"},
		{"no partition key index", string(wrap(withRecords(noPK))), "records[0]: has no partition_key_index"},
		{"no data", string(wrap(withRecords(protowire.AppendVarint(protowire.AppendTag(nil, 1, protowire.VarintType), 0)))), "records[0]: has no data"},
		{"partition key index out of range", string(wrap(withRecords(record(0, "ok"), record(1, "bad")))), "records[1]: partition_key_index 1 is outside the partition key table of 1"},
		{"huge index", string(wrap(withRecords(record(1<<40, "bad")))), "records[0]: field 1: index 1099511627776 is beyond any table"},
		{"hash key index, no table", string(wrap(withRecords(withEHK))), "explicit_hash_key_index 0 is outside the explicit hash key table of 0"},
		{"not an aggregate", `{"id":"1"}`, "does not begin with the magic bytes F3 89 9A C2"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			recs, err := Deaggregate([]byte(c.data), 0)
			if err == nil {
				t.Fatalf("decoded %d records", len(recs))
			}
			if !strings.HasPrefix(err.Error(), "kpl: ") || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %q, want one beginning \"kpl: \" and saying %q", err, c.want)
			}
		})
	}
}

// TestLimit: an aggregate of more records than the limit is refused once
// the limit is passed; one of exactly the limit is read.
func TestLimit(t *testing.T) {
	recs := make([][]byte, 11)
	for i := range recs {
		recs[i] = record(0, "x")
	}
	if _, err := Deaggregate(wrap(withRecords(recs[:10]...)), 10); err != nil {
		t.Fatalf("10 records, limit 10: %v", err)
	}
	_, err := Deaggregate(wrap(withRecords(recs...)), 10)
	if err == nil || err.Error() != "kpl: holds more than 10 records, the most an aggregate may hold" {
		t.Fatalf("11 records, limit 10: %v", err)
	}
}

// TestIsAggregate looks at the first four bytes only.
func TestIsAggregate(t *testing.T) {
	for data, want := range map[string]bool{
		"":                     false,
		"\xf3\x89\x9a":         false,
		"\xf3\x89\x9a\xc2":     true,
		"\xf3\x89\x9a\xc2rest": true,
		"\xf3\x89\x9a\xc3":     false,
		`[{"id":"1"}]`:         false,
	} {
		if got := IsAggregate([]byte(data)); got != want {
			t.Errorf("IsAggregate(%q) = %v", data, got)
		}
	}
}

// FuzzDeaggregate: any input gives records or a "kpl: " error, never a
// panic; records' data lies within the input.
func FuzzDeaggregate(f *testing.F) {
	f.Add(kpltest.Aggregate([]kpltest.Record{{PartitionKey: "a", ExplicitHashKey: "1", Data: []byte("x"), Tags: [][2]string{{"k", "v"}}}}))
	f.Add(wrap(withRecords(record(0, "a"), record(0, ""))))
	f.Add([]byte("\xf3\x89\x9a\xc2"))
	f.Fuzz(func(t *testing.T, pb []byte) {
		for _, data := range [][]byte{pb, wrap(pb)} { // as given, and with a digest that matches
			recs, err := Deaggregate(data, 1000)
			if err != nil {
				if !strings.HasPrefix(err.Error(), "kpl: ") {
					t.Fatalf("error %q", err)
				}
				continue
			}
			if len(recs) == 0 || len(recs) > 1000 {
				t.Fatalf("%d records", len(recs))
			}
			for _, r := range recs {
				if len(r.Data) > len(data) {
					t.Fatalf("record of %d bytes from %d", len(r.Data), len(data))
				}
			}
		}
	})
}
