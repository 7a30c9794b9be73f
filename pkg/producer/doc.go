// Package producer sends CloudEvents to shardline: to its Kinesis stream
// (Kinesis, with batching, retries of only the failed records, a bounded
// buffer and optional KPL aggregation) or to its HTTP API (HTTP, with
// batching, Retry-After and SigV4 signing).
//
// Both give every event an id (a UUIDv7) when it has none and a time when
// it has none, before the first attempt, so that however often an event is
// sent again it is stored once.
package producer
