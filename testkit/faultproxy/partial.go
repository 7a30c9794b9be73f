package faultproxy

import (
	"encoding/json"
	"fmt"
	"net/http"
)

// batchWrite is a BatchWriteItem request, as partial reads it: the write
// requests of each table, each kept as it came.
type batchWrite struct {
	RequestItems           map[string][]json.RawMessage `json:"RequestItems"`
	ReturnConsumedCapacity string                       `json:"ReturnConsumedCapacity,omitempty"`
}

// writeRequest is one of a BatchWriteItem's write requests.
type writeRequest struct {
	PutRequest *struct {
		Item map[string]json.RawMessage `json:"Item"`
	} `json:"PutRequest"`
	DeleteRequest *struct {
		Key map[string]json.RawMessage `json:"Key"`
	} `json:"DeleteRequest"`
}

// attrs is what a Hold judges a write request by: a put's item, a
// delete's key.
func (wr writeRequest) attrs() map[string]json.RawMessage {
	switch {
	case wr.PutRequest != nil:
		return wr.PutRequest.Item
	case wr.DeleteRequest != nil:
		return wr.DeleteRequest.Key
	}
	return nil
}

// partial forwards the write requests hold does not pick and adds the
// others to the answer's UnprocessedItems; with refuseWhole, a request of
// which it holds everything is answered ProvisionedThroughputExceeded. The
// request is signed, but DynamoDB Local does not check signatures, so the
// body can change.
func (p *Proxy) partial(w http.ResponseWriter, r *http.Request, body []byte, hold Hold, refuseWhole bool) {
	var in batchWrite
	if err := json.Unmarshal(body, &in); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	fwd := batchWrite{RequestItems: map[string][]json.RawMessage{}, ReturnConsumedCapacity: in.ReturnConsumedCapacity}
	held := map[string][]json.RawMessage{}
	for table, reqs := range in.RequestItems {
		for _, raw := range reqs {
			var wr writeRequest
			if json.Unmarshal(raw, &wr) == nil && wr.attrs() != nil && hold(wr.attrs()) {
				held[table] = append(held[table], raw)
				p.Held.Add(1)
				continue
			}
			fwd.RequestItems[table] = append(fwd.RequestItems[table], raw)
		}
	}
	if len(held) == 0 {
		// Nothing held: the request goes on as it came (re-encoding the
		// overload simulation's 12 KB items took 7 % of its Go CPU).
		p.forward(w, r, body, nil)
		return
	}
	unprocessed, _ := json.Marshal(held)
	if len(fwd.RequestItems) == 0 && refuseWhole {
		p.Faults.Add(1)
		writeFault(w, Throttled)
		return
	}
	if len(fwd.RequestItems) == 0 {
		w.Header().Set("Content-Type", "application/x-amz-json-1.0")
		fmt.Fprintf(w, `{"UnprocessedItems":%s}`, unprocessed)
		return
	}
	newBody, _ := json.Marshal(fwd)
	p.forwardAdding(w, r, newBody, "UnprocessedItems", unprocessed)
}

// forwardAdding forwards body and sets field of the answer to value: the
// requests a Hold held, as UnprocessedItems or UnprocessedKeys.
func (p *Proxy) forwardAdding(w http.ResponseWriter, r *http.Request, body []byte, field string, value json.RawMessage) {
	p.forward(w, r, body, func(b []byte) []byte {
		var out map[string]json.RawMessage
		if json.Unmarshal(b, &out) != nil {
			return b
		}
		out[field] = value
		b2, _ := json.Marshal(out)
		return b2
	})
}
