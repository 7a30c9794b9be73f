package shardline

import (
	"path"
	"strings"
	"testing"
)

// request is a DynamoDB request as IAM sees it: the action it authorizes
// against and the partition key it touches (dynamodb:LeadingKeys). A
// DeleteRequest inside BatchWriteItem is authorized as
// dynamodb:BatchWriteItem, exactly like a PutRequest: DynamoDB has no
// condition key that tells them apart (dynamodb:EnclosingOperation names
// the transaction APIs, whose parts are authorized as PutItem, DeleteItem,
// and so on).
type request struct {
	what   string
	action string
	pk     string
}

// allowedBy says whether the function's role policy allows r: an Allow
// statement names the action and the table, and its LeadingKeys condition,
// if any, matches the key. There are no Deny statements to consider
// (TestDeleteRightsAreExactlyTheseOnes checks).
func allowedBy(t *testing.T, s synth, fn string, r request) bool {
	t.Helper()
	for id, pol := range s.resources("AWS::IAM::Policy") {
		if !strings.HasPrefix(id, "P"+fn) {
			continue
		}
		for _, st := range props(pol)["PolicyDocument"].(map[string]any)["Statement"].([]any) {
			st := st.(map[string]any)
			if st["Effect"] != "Allow" {
				t.Fatalf("%s: a %v statement; allowedBy only reads Allow", id, st["Effect"])
			}
			if hasAction(st["Action"], r.action) && leadingKeysMatch(st["Condition"], r.pk) {
				return true
			}
		}
	}
	return false
}

func hasAction(v any, action string) bool {
	switch a := v.(type) {
	case string:
		return a == action
	case []any:
		for _, x := range a {
			if x == action {
				return true
			}
		}
	}
	return false
}

func leadingKeysMatch(cond any, pk string) bool {
	c, _ := cond.(map[string]any)
	like, _ := c["ForAllValues:StringLike"].(map[string]any)
	patterns, ok := like["dynamodb:LeadingKeys"].([]any)
	if !ok {
		return len(c) == 0 // no condition: any key
	}
	for _, p := range patterns {
		if ok, _ := path.Match(p.(string), pk); ok {
			return true
		}
	}
	return false
}

// TestDeleteRightsAreExactlyTheseOnes pins what each role may remove or
// replace, for the threat model: ingest can delete (a DeleteRequest in a
// BatchWriteItem) or overwrite any event or quarantined record, and
// overwrite but not delete a shard record; it has no DeleteItem, UpdateItem,
// PartiQL or transaction write; the query function can change nothing.
func TestDeleteRightsAreExactlyTheseOnes(t *testing.T) {
	s := defaultSynth(t)
	const ev, q, meta = "E#src#2026-11-22#3", "Q#2026-11-22#1", "M#E#src#2026-11-22"
	for _, c := range []struct {
		fn    string
		r     request
		allow bool
	}{
		{"Ingest", request{"write or delete an event (PutRequest or DeleteRequest)", "dynamodb:BatchWriteItem", ev}, true},
		{"Ingest", request{"write or delete a quarantined record", "dynamodb:BatchWriteItem", q}, true},
		{"Ingest", request{"delete a shard record in a batch", "dynamodb:BatchWriteItem", meta}, false},
		{"Ingest", request{"overwrite a shard record", "dynamodb:PutItem", meta}, true},
		{"Ingest", request{"read shard records in bulk", "dynamodb:BatchGetItem", meta}, true},
		{"Ingest", request{"read events in bulk", "dynamodb:BatchGetItem", ev}, false},
		{"Ingest", request{"overwrite an event one at a time", "dynamodb:PutItem", ev}, false},
		{"Ingest", request{"delete a shard record", "dynamodb:DeleteItem", meta}, false},
		{"Ingest", request{"delete an event", "dynamodb:DeleteItem", ev}, false},
		{"Ingest", request{"update an event", "dynamodb:UpdateItem", ev}, false},
		{"Ingest", request{"delete through PartiQL", "dynamodb:PartiQLDelete", ev}, false},
		{"Ingest", request{"read an event back", "dynamodb:GetItem", ev}, false},
		{"Ingest", request{"query events", "dynamodb:Query", ev}, false},
		{"Query", request{"write or delete an event", "dynamodb:BatchWriteItem", ev}, false},
		{"Query", request{"delete an event", "dynamodb:DeleteItem", ev}, false},
		{"Query", request{"overwrite a shard record", "dynamodb:PutItem", meta}, false},
		{"Query", request{"update an event", "dynamodb:UpdateItem", ev}, false},
		{"Query", request{"read a day's shard record and hour index", "dynamodb:Query", meta}, true},
		{"Query", request{"read a shard record by key (it queries instead)", "dynamodb:GetItem", meta}, false},
		{"Query", request{"query events", "dynamodb:Query", ev}, true},
		{"Query", request{"read where the counters' fold stands", "dynamodb:GetItem", "C##L1"}, true},
		{"Query", request{"read a source's counter item by key (it queries instead)", "dynamodb:GetItem", "C#src"}, false},
		{"Query", request{"update a counter", "dynamodb:UpdateItem", "C##L1"}, false},
		{"Counter", request{"write a link of its chain", "dynamodb:PutItem", "C##L0#shardId-1"}, true},
		{"Counter", request{"write an event", "dynamodb:PutItem", ev}, false},
		{"Counter", request{"delete a link", "dynamodb:DeleteItem", "C##L0#shardId-1"}, false},
		{"CountFold", request{"write a bucket pack", "dynamodb:PutItem", "C##L1#64#3"}, true},
		{"CountFold", request{"delete a link", "dynamodb:DeleteItem", "C##L0#shardId-1"}, false},
		{"CountFold", request{"write an event", "dynamodb:PutItem", ev}, false},
	} {
		if got := allowedBy(t, s, c.fn, c.r); got != c.allow {
			t.Errorf("%s may %s (%s on %s): %v, want %v", c.fn, c.r.what, c.r.action, c.r.pk, got, c.allow)
		}
	}
}
