// Package query is the query function: it serves pages of a source's
// events, the quarantine, and (with internal/counts and internal/catalog)
// the other read routes. The API contract is docs/api.md.
//
// A page is planned, then read. The planner (planner.go, days.go) reads
// what the days of the range hold and chooses the path: the GSI, or a
// scatter-gather over the base table's shards (path.go). The page reader
// (page.go) opens the path's buckets a few ahead of need (window.go),
// merges their partitions in key order (segment.go), fetches the events a
// lean GSI left out (fill.go), and cuts the page to its limit and to
// Lambda's payload limit (size.go). Every DynamoDB request a page makes
// goes through requests.go, which bounds and counts them.
package query
