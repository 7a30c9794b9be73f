// Package kpltest builds KPL aggregated records for tests with the protobuf
// library's own encoder (dynamicpb messages over a descriptor of the KPL's
// messages), so that tests of package kpl's hand-written decoder do not
// decode what the decoder's own logic encoded.
package kpltest

import (
	"crypto/md5"
	"fmt"
	"sync"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/dynamicpb"
)

// Magic is the KPL's magic bytes, spelled out here rather than taken from
// package kpl.
var Magic = []byte{0xF3, 0x89, 0x9A, 0xC2}

// Record is one user record to aggregate.
type Record struct {
	PartitionKey    string
	ExplicitHashKey string // none when empty
	Data            []byte
	Tags            [][2]string // key, value: written as the record's tags
}

// Aggregate is the data of a Kinesis record aggregating recs: the magic
// bytes, the AggregatedRecord protobuf, its MD5 digest. Keys are numbered
// in the order first seen, as the KPL does.
func Aggregate(recs []Record) []byte {
	return Wrap(Protobuf(recs))
}

// Wrap frames protobuf bytes as an aggregate: magic, bytes, digest.
func Wrap(pb []byte) []byte {
	sum := md5.Sum(pb)
	out := append(append([]byte{}, Magic...), pb...)
	return append(out, sum[:]...)
}

// Protobuf is the AggregatedRecord message of recs, as encoded by
// proto.Marshal.
func Protobuf(recs []Record) []byte {
	d := descriptors()
	agg := dynamicpb.NewMessage(d.aggregated)
	af := d.aggregated.Fields()
	pkTable := agg.Mutable(af.ByName("partition_key_table")).List()
	ehkTable := agg.Mutable(af.ByName("explicit_hash_key_table")).List()
	records := agg.Mutable(af.ByName("records")).List()
	pkIndex, ehkIndex := map[string]uint64{}, map[string]uint64{}
	index := func(table protoreflect.List, seen map[string]uint64, key string) uint64 {
		i, ok := seen[key]
		if !ok {
			i = uint64(table.Len())
			seen[key] = i
			table.Append(protoreflect.ValueOfString(key))
		}
		return i
	}
	rf := d.record.Fields()
	for _, r := range recs {
		m := dynamicpb.NewMessage(d.record)
		m.Set(rf.ByName("partition_key_index"), protoreflect.ValueOfUint64(index(pkTable, pkIndex, r.PartitionKey)))
		if r.ExplicitHashKey != "" {
			m.Set(rf.ByName("explicit_hash_key_index"), protoreflect.ValueOfUint64(index(ehkTable, ehkIndex, r.ExplicitHashKey)))
		}
		m.Set(rf.ByName("data"), protoreflect.ValueOfBytes(append([]byte{}, r.Data...)))
		tags := m.Mutable(rf.ByName("tags")).List()
		for _, kv := range r.Tags {
			t := dynamicpb.NewMessage(d.tag)
			t.Set(d.tag.Fields().ByName("key"), protoreflect.ValueOfString(kv[0]))
			t.Set(d.tag.Fields().ByName("value"), protoreflect.ValueOfString(kv[1]))
			tags.Append(protoreflect.ValueOfMessage(t))
		}
		records.Append(protoreflect.ValueOfMessage(m))
	}
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(agg)
	if err != nil {
		panic(fmt.Sprintf("kpltest: marshal AggregatedRecord: %v", err))
	}
	return b
}

// WithUnknownField appends to a protobuf message a field its reader does
// not know (number 15, a string), as a newer producer might.
func WithUnknownField(pb []byte) []byte {
	pb = protowire.AppendTag(append([]byte{}, pb...), 15, protowire.BytesType)
	return protowire.AppendString(pb, "from the future")
}

type kplDescriptors struct {
	aggregated, record, tag protoreflect.MessageDescriptor
}

var descriptors = sync.OnceValue(func() kplDescriptors {
	opt := descriptorpb.FieldDescriptorProto_LABEL_OPTIONAL.Enum()
	req := descriptorpb.FieldDescriptorProto_LABEL_REQUIRED.Enum()
	rep := descriptorpb.FieldDescriptorProto_LABEL_REPEATED.Enum()
	str := descriptorpb.FieldDescriptorProto_TYPE_STRING.Enum()
	u64 := descriptorpb.FieldDescriptorProto_TYPE_UINT64.Enum()
	byt := descriptorpb.FieldDescriptorProto_TYPE_BYTES.Enum()
	msg := descriptorpb.FieldDescriptorProto_TYPE_MESSAGE.Enum()
	field := func(name string, num int32, l *descriptorpb.FieldDescriptorProto_Label, t *descriptorpb.FieldDescriptorProto_Type, typeName string) *descriptorpb.FieldDescriptorProto {
		f := &descriptorpb.FieldDescriptorProto{Name: proto.String(name), Number: proto.Int32(num), Label: l, Type: t}
		if typeName != "" {
			f.TypeName = proto.String(typeName)
		}
		return f
	}
	// The KPL's messages.proto, as the awslabs aggregators ship it.
	file := &descriptorpb.FileDescriptorProto{
		Name:    proto.String("kpl/messages.proto"),
		Syntax:  proto.String("proto2"),
		Package: proto.String("kpl"),
		MessageType: []*descriptorpb.DescriptorProto{
			{Name: proto.String("Tag"), Field: []*descriptorpb.FieldDescriptorProto{
				field("key", 1, req, str, ""),
				field("value", 2, opt, str, ""),
			}},
			{Name: proto.String("Record"), Field: []*descriptorpb.FieldDescriptorProto{
				field("partition_key_index", 1, req, u64, ""),
				field("explicit_hash_key_index", 2, opt, u64, ""),
				field("data", 3, req, byt, ""),
				field("tags", 4, rep, msg, ".kpl.Tag"),
			}},
			{Name: proto.String("AggregatedRecord"), Field: []*descriptorpb.FieldDescriptorProto{
				field("partition_key_table", 1, rep, str, ""),
				field("explicit_hash_key_table", 2, rep, str, ""),
				field("records", 3, rep, msg, ".kpl.Record"),
			}},
		},
	}
	fd, err := protodesc.NewFile(file, nil)
	if err != nil {
		panic(fmt.Sprintf("kpltest: KPL descriptor: %v", err))
	}
	m := fd.Messages()
	return kplDescriptors{aggregated: m.ByName("AggregatedRecord"), record: m.ByName("Record"), tag: m.ByName("Tag")}
})
