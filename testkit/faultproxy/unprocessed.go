package faultproxy

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
)

// HoldKeysUnprocessed asks that the Hold the Rule returns for this
// BatchGetItem pick keys to leave unprocessed, in the answer's
// UnprocessedKeys, as DynamoDB does with keys it could not read in time
// (throttling, a 16 MB answer), rather than items a stale replica misses:
// the other keys are read, strongly consistent or not, and a request of
// which every key is held reads nothing. Call it inside the Rule.
func (r Request) HoldKeysUnprocessed() {
	if r.meter != nil {
		r.meter.keysUnprocessed = true
	}
}

// unprocessed forwards the keys of a BatchGetItem that hold does not pick
// and adds the others to the answer's UnprocessedKeys, each table's with
// its own consistency and projection, as DynamoDB gives them back.
func (p *Proxy) unprocessed(w http.ResponseWriter, r *http.Request, body []byte, hold Hold) {
	var in map[string]json.RawMessage
	var tables map[string]map[string]json.RawMessage
	if err := json.Unmarshal(body, &in); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	if err := json.Unmarshal(in["RequestItems"], &tables); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	fwd, held := map[string]map[string]json.RawMessage{}, map[string]map[string]json.RawMessage{}
	for table, ka := range tables {
		var keys, kept, left []map[string]json.RawMessage
		if err := json.Unmarshal(ka["Keys"], &keys); err != nil {
			http.Error(w, fmt.Sprintf("%s: Keys: %v", table, err), http.StatusBadRequest)
			return
		}
		for _, k := range keys {
			if hold(k) {
				left = append(left, k)
				p.Held.Add(1)
			} else {
				kept = append(kept, k)
			}
		}
		if len(kept) > 0 {
			fwd[table] = withKeys(ka, kept)
		}
		if len(left) > 0 {
			held[table] = withKeys(ka, left)
		}
	}
	if len(held) == 0 {
		p.forward(w, r, body, nil)
		return
	}
	unprocessed, _ := json.Marshal(held)
	if len(fwd) == 0 {
		w.Header().Set("Content-Type", "application/x-amz-json-1.0")
		fmt.Fprintf(w, `{"Responses":{},"UnprocessedKeys":%s}`, unprocessed)
		return
	}
	in["RequestItems"], _ = json.Marshal(fwd)
	newBody, _ := json.Marshal(in)
	p.forwardAdding(w, r, newBody, "UnprocessedKeys", unprocessed)
}

// withKeys is a table's KeysAndAttributes ka with keys in place of its own.
func withKeys(ka map[string]json.RawMessage, keys []map[string]json.RawMessage) map[string]json.RawMessage {
	out := maps.Clone(ka)
	out["Keys"], _ = json.Marshal(keys)
	return out
}
