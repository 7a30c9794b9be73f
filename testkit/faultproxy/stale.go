package faultproxy

import (
	"encoding/json"
	"net/http"
)

// batchGet is what stale reads of a BatchGetItem request: which tables it
// reads strongly consistent.
type batchGet struct {
	RequestItems map[string]struct {
		ConsistentRead bool `json:"ConsistentRead"`
	} `json:"RequestItems"`
}

// stale forwards a BatchGetItem and leaves out of its answer the items
// hold picks from the tables read eventually consistent, as a replica that
// has not yet seen them answers: neither in Responses nor in
// UnprocessedKeys. DynamoDB Local is always consistent, so this is the only
// way a test meets such a miss. Strongly consistent reads are answered
// whole.
func (p *Proxy) stale(w http.ResponseWriter, r *http.Request, body []byte, hold Hold) {
	var in batchGet
	if err := json.Unmarshal(body, &in); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	p.forward(w, r, body, func(b []byte) []byte {
		var out map[string]json.RawMessage
		var responses map[string][]map[string]json.RawMessage
		if json.Unmarshal(b, &out) != nil || json.Unmarshal(out["Responses"], &responses) != nil {
			return b
		}
		for table, items := range responses {
			if in.RequestItems[table].ConsistentRead {
				continue
			}
			kept := items[:0]
			for _, it := range items {
				if hold(it) {
					p.Held.Add(1)
					continue
				}
				kept = append(kept, it)
			}
			responses[table] = kept
		}
		out["Responses"], _ = json.Marshal(responses)
		b2, _ := json.Marshal(out)
		return b2
	})
}
