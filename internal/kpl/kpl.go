// Package kpl reads the Kinesis Producer Library's aggregated record format:
// the user records that a KPL (or Fluent Bit, Flink, the awslabs
// aggregators) packed into one Kinesis record.
//
// The format: the magic bytes F3 89 9A C2, then a protobuf (proto2)
// AggregatedRecord, then the 16-byte MD5 digest of the protobuf bytes.
//
//	message AggregatedRecord {
//	  repeated string partition_key_table     = 1;
//	  repeated string explicit_hash_key_table = 2;
//	  repeated Record records                 = 3;
//	}
//	message Record {
//	  required uint64 partition_key_index     = 1;
//	  optional uint64 explicit_hash_key_index = 2;
//	  required bytes  data                    = 3;
//	  repeated Tag    tags                    = 4;
//	}
//
// It is written on protowire, not on the awslabs deaggregator: docs/api.md
// ("Kinesis: aggregated records") says why.
package kpl

import (
	"bytes"
	"crypto/md5"
	"fmt"
	"math"

	"google.golang.org/protobuf/encoding/protowire"
)

// Magic is the four bytes an aggregated record's data begins with.
var Magic = [4]byte{0xF3, 0x89, 0x9A, 0xC2}

// DigestLen is the length of the MD5 digest that ends an aggregate.
const DigestLen = md5.Size

// MinLen is the length of the shortest aggregate: the magic bytes and the
// digest of an empty protobuf.
const MinLen = len(Magic) + DigestLen

// IsAggregate says whether data is meant as an aggregate: it begins with
// the magic bytes. Whether it is a sound one is for Deaggregate to say.
func IsAggregate(data []byte) bool {
	return len(data) >= len(Magic) && [4]byte(data[:len(Magic)]) == Magic
}

// Record is one user record of an aggregate.
type Record struct {
	PartitionKey    string
	ExplicitHashKey string // empty when the record has none
	// Data is the record's payload. It shares memory with the aggregate
	// given to Deaggregate.
	Data []byte
}

// Deaggregate reads the user records of an aggregate, in order. It checks
// the digest, the protobuf's wire format, the two required fields of each
// record and that every key index is inside its table; tags and unknown
// fields are skipped. An aggregate of more than limit records is refused
// before more are read (limit <= 0: no limit).
//
// Every error's message begins "kpl: " and says what is wrong; the
// aggregate is then unusable as a whole: a digest that does not match
// means its bytes cannot be trusted, and a protobuf that does not parse
// cannot be split.
func Deaggregate(data []byte, limit int) ([]Record, error) {
	if !IsAggregate(data) {
		return nil, fmt.Errorf("kpl: does not begin with the magic bytes % X", Magic[:])
	}
	if len(data) < MinLen {
		return nil, fmt.Errorf("kpl: is %d bytes; an aggregate is at least %d (the magic bytes and a %d-byte MD5 digest)", len(data), MinLen, DigestLen)
	}
	msg := data[len(Magic) : len(data)-DigestLen]
	if sum := md5.Sum(msg); !bytes.Equal(sum[:], data[len(data)-DigestLen:]) {
		return nil, fmt.Errorf("kpl: the MD5 digest does not match the %d protobuf bytes: the record is corrupt or truncated", len(msg))
	}
	agg, err := parseAggregate(msg, limit)
	if err != nil {
		return nil, err
	}
	if len(agg.records) == 0 {
		return nil, fmt.Errorf("kpl: holds no records")
	}
	out := make([]Record, len(agg.records))
	for i, r := range agg.records {
		if out[i], err = agg.resolve(r); err != nil {
			return nil, fmt.Errorf("kpl: records[%d]: %w", i, err)
		}
	}
	return out, nil
}

// aggregate is an AggregatedRecord as read, its records' key indexes not
// yet looked up.
type aggregate struct {
	partitionKeys, hashKeys []string
	records                 []rawRecord
}

// rawRecord is a Record as read: an index of -1 is a field absent.
type rawRecord struct {
	pk, ehk int64
	data    []byte
}

// resolve looks up a record's keys in the tables.
func (a *aggregate) resolve(r rawRecord) (Record, error) {
	if r.pk < 0 {
		return Record{}, fmt.Errorf("has no partition_key_index, a required field")
	}
	if r.data == nil {
		return Record{}, fmt.Errorf("has no data, a required field")
	}
	if r.pk >= int64(len(a.partitionKeys)) {
		return Record{}, fmt.Errorf("partition_key_index %d is outside the partition key table of %d", r.pk, len(a.partitionKeys))
	}
	rec := Record{PartitionKey: a.partitionKeys[r.pk], Data: r.data}
	if r.ehk >= 0 {
		if r.ehk >= int64(len(a.hashKeys)) {
			return Record{}, fmt.Errorf("explicit_hash_key_index %d is outside the explicit hash key table of %d", r.ehk, len(a.hashKeys))
		}
		rec.ExplicitHashKey = a.hashKeys[r.ehk]
	}
	return rec, nil
}

// Field numbers of the two messages.
const (
	fieldPartitionKeyTable    = 1 // AggregatedRecord
	fieldExplicitHashKeyTable = 2
	fieldRecords              = 3
	fieldPartitionKeyIndex    = 1 // Record
	fieldExplicitHashKeyIndex = 2
	fieldData                 = 3
	fieldTags                 = 4
)

// The wire type of each field a message's reader knows.
var (
	aggregateFields = map[protowire.Number]protowire.Type{
		fieldPartitionKeyTable:    protowire.BytesType,
		fieldExplicitHashKeyTable: protowire.BytesType,
		fieldRecords:              protowire.BytesType,
	}
	recordFields = map[protowire.Number]protowire.Type{
		fieldPartitionKeyIndex:    protowire.VarintType,
		fieldExplicitHashKeyIndex: protowire.VarintType,
		fieldData:                 protowire.BytesType,
		fieldTags:                 protowire.BytesType, // read past, unused
	}
)

// parseAggregate reads an AggregatedRecord message.
func parseAggregate(b []byte, limit int) (*aggregate, error) {
	agg := &aggregate{}
	err := fields(b, aggregateFields, func(num protowire.Number, v []byte, _ uint64) error {
		switch num {
		case fieldPartitionKeyTable:
			agg.partitionKeys = append(agg.partitionKeys, string(v))
		case fieldExplicitHashKeyTable:
			agg.hashKeys = append(agg.hashKeys, string(v))
		case fieldRecords:
			if limit > 0 && len(agg.records) == limit {
				return fmt.Errorf("holds more than %d records, the most an aggregate may hold", limit)
			}
			r, err := parseRecord(v)
			if err != nil {
				return fmt.Errorf("records[%d]: %w", len(agg.records), err)
			}
			agg.records = append(agg.records, r)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("kpl: %w", err)
	}
	return agg, nil
}

// parseRecord reads a Record message.
func parseRecord(b []byte) (rawRecord, error) {
	r := rawRecord{pk: -1, ehk: -1}
	err := fields(b, recordFields, func(num protowire.Number, v []byte, n uint64) error {
		switch num {
		case fieldPartitionKeyIndex, fieldExplicitHashKeyIndex:
			if n > math.MaxInt32 { // no table that fits in a record is that long
				return fmt.Errorf("field %d: index %d is beyond any table", num, n)
			}
			if num == fieldPartitionKeyIndex {
				r.pk = int64(n)
			} else {
				r.ehk = int64(n)
			}
		case fieldData:
			r.data = v[:len(v):len(v)] // never nil, even when empty: nil is "absent"
		}
		return nil
	})
	return r, err
}

// fields walks the fields of a message, calling f for each field that known
// lists (a length-delimited field's bytes in v, a varint's value in n).
// Unknown fields are skipped, as protobuf readers do. A known field with
// another wire type, or any malformed tag, varint or length, is an error
// naming the byte offset in the message.
func fields(b []byte, known map[protowire.Number]protowire.Type, f func(num protowire.Number, v []byte, n uint64) error) error {
	for off := 0; off < len(b); {
		num, typ, n := protowire.ConsumeTag(b[off:])
		if n < 0 {
			return fmt.Errorf("bad protobuf: field tag at byte %d: %w", off, protowire.ParseError(n))
		}
		want, ok := known[num]
		var (
			v   []byte
			val uint64
			m   int
		)
		switch {
		case !ok:
			m = protowire.ConsumeFieldValue(num, typ, b[off+n:])
		case typ != want:
			return fmt.Errorf("bad protobuf: field %d at byte %d has wire type %d, want %d", num, off, typ, want)
		case typ == protowire.BytesType:
			v, m = protowire.ConsumeBytes(b[off+n:])
		default:
			val, m = protowire.ConsumeVarint(b[off+n:])
		}
		if m < 0 {
			return fmt.Errorf("bad protobuf: field %d at byte %d: %w", num, off, protowire.ParseError(m))
		}
		if ok {
			if err := f(num, v, val); err != nil {
				return err
			}
		}
		off += n + m
	}
	return nil
}
