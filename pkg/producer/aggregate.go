package producer

import (
	"crypto/md5"

	"google.golang.org/protobuf/encoding/protowire"
)

// kplMagic begins a KPL aggregated record.
var kplMagic = []byte{0xF3, 0x89, 0x9A, 0xC2}

// aggregator packs user records into one KPL aggregated record: the magic
// bytes, a protobuf AggregatedRecord (partition key table, records), the
// MD5 digest of the protobuf. Every sub-record here shares the aggregate's
// one partition key, as ingest does not read sub-records' keys.
type aggregator struct {
	key  string
	recs [][]byte // each sub-record's data
	size int      // protobuf bytes so far
}

// protobuf field numbers of the KPL's messages.proto.
const (
	aggPartitionKeyTable = 1
	aggRecords           = 3
	recPartitionKeyIndex = 1
	recData              = 3
)

// recordSize is what a sub-record of data adds to the protobuf.
func recordSize(data []byte) int {
	inner := protowire.SizeTag(recPartitionKeyIndex) + protowire.SizeVarint(0) +
		protowire.SizeTag(recData) + protowire.SizeBytes(len(data))
	return protowire.SizeTag(aggRecords) + protowire.SizeBytes(inner)
}

// sizeWith is the aggregated record's length if data were added.
func (a *aggregator) sizeWith(data []byte) int {
	size := a.size
	if len(a.recs) == 0 {
		size = protowire.SizeTag(aggPartitionKeyTable) + protowire.SizeBytes(len(a.key))
	}
	return len(kplMagic) + size + recordSize(data) + md5.Size
}

func (a *aggregator) add(data []byte) {
	if len(a.recs) == 0 {
		a.size = protowire.SizeTag(aggPartitionKeyTable) + protowire.SizeBytes(len(a.key))
	}
	a.recs = append(a.recs, data)
	a.size += recordSize(data)
}

// bytes is the aggregated record.
func (a *aggregator) bytes() []byte {
	pb := make([]byte, 0, a.size)
	pb = protowire.AppendTag(pb, aggPartitionKeyTable, protowire.BytesType)
	pb = protowire.AppendString(pb, a.key)
	for _, d := range a.recs {
		inner := protowire.SizeTag(recPartitionKeyIndex) + protowire.SizeVarint(0) +
			protowire.SizeTag(recData) + protowire.SizeBytes(len(d))
		pb = protowire.AppendTag(pb, aggRecords, protowire.BytesType)
		pb = protowire.AppendVarint(pb, uint64(inner))
		pb = protowire.AppendTag(pb, recPartitionKeyIndex, protowire.VarintType)
		pb = protowire.AppendVarint(pb, 0)
		pb = protowire.AppendTag(pb, recData, protowire.BytesType)
		pb = protowire.AppendBytes(pb, d)
	}
	sum := md5.Sum(pb)
	out := make([]byte, 0, len(kplMagic)+len(pb)+md5.Size)
	out = append(append(append(out, kplMagic...), pb...), sum[:]...)
	return out
}
