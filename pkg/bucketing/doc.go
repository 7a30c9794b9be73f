// Package bucketing is shardline's key scheme: how an event's source, id and
// time become the partition and sort keys of the events table and of its
// time-bucket GSI, and back.
//
// The scheme, for an event with source S, id I and time T (UTC):
//
//	base table  pk  = "E#" + esc(S) + "#" + day(T) + "#" + shard
//	            sk  = time(T) + "#" + I
//	GSI         gpk = "G#" + esc(S) + "#" + hour(T) + "#" + gsiShard
//	            sk  = (the same attribute as the base table's sort key)
//
// where day(T) is "2006-01-02", hour(T) is "2006-01-02T15", time(T) is the
// fixed-width "2006-01-02T15:04:05.000000000Z", and esc escapes the two bytes
// that could make a partition key ambiguous: '%' becomes "%25" and '#' becomes
// "%23". Every other byte of S is kept as it is, so keys stay readable in the
// console.
//
// The keys are injective. esc is injective and its output holds no '#', so the
// fields of a partition key split back unambiguously on '#'. The sort key needs
// no escaping at all: time(T) has a fixed width, so the id is everything after
// byte 31. Because of that, and because DynamoDB orders string sort keys by
// their UTF-8 bytes, the order of sort keys inside one partition is exactly
// the order (time, id bytewise) that the query API promises.
//
// The shard is a pure function of the event: a 64-bit hash of (S, I) (see
// [Hash]) reduced to [0, n). A retried write of the same event lands on the
// same item, so writing an event twice leaves one item. The GSI shard uses the
// other half of the same hash, so the two assignments are independent.
//
// The first byte of every partition key names its key space: 'E' events,
// 'Q' quarantined records, 'M' shard-count records, 'G' the GSI. Since a
// source is escaped and every field is delimited, no source, however it is
// spelled, can produce a key in another source's or another space's range.
package bucketing
