// Package ddbstub is a stand-in DynamoDB endpoint for benchmarks: it speaks
// the JSON protocol of the write operations, stores nothing, answers after a
// fixed latency, and reports the write capacity each request would consume,
// so that the client's own work and its request pattern can be measured
// without DynamoDB Local's (slow, unrealistic) storage engine.
package ddbstub

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"time"
)

// Server is a running stub.
type Server struct {
	URL      string
	Latency  time.Duration // added to every request
	Requests atomic.Int64
	wcu      atomic.Int64 // in thousandths
	srv      *httptest.Server
	// GSIAttr names the attribute that puts an item in the GSI, and
	// GSIProjected the non-key attributes the GSI holds, to price GSI writes.
	GSIAttr      string
	GSIProjected []string
	GSIKeys      []string
}

// New starts a stub that answers after latency.
func New(latency time.Duration) *Server {
	s := &Server{Latency: latency}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	s.URL = s.srv.URL
	return s
}

// Close stops the stub.
func (s *Server) Close() { s.srv.Close() }

// WCU is the write capacity consumed so far.
func (s *Server) WCU() float64 { return float64(s.wcu.Load()) / 1000 }

// Reset zeroes the counters.
func (s *Server) Reset() { s.Requests.Store(0); s.wcu.Store(0) }

type attrs map[string]map[string]json.RawMessage

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	s.Requests.Add(1)
	time.Sleep(s.Latency)
	op := r.Header.Get("X-Amz-Target")
	op = op[strings.LastIndexByte(op, '.')+1:]
	w.Header().Set("Content-Type", "application/x-amz-json-1.0")
	switch op {
	case "BatchWriteItem":
		var in struct {
			RequestItems map[string][]struct{ PutRequest *struct{ Item attrs } }
		}
		if err := json.Unmarshal(body, &in); err != nil {
			http.Error(w, err.Error(), 400)
			return
		}
		var table string
		var units float64
		for t, reqs := range in.RequestItems {
			table = t
			for _, rq := range reqs {
				if rq.PutRequest != nil {
					units += s.itemWCU(rq.PutRequest.Item)
				}
			}
		}
		s.wcu.Add(int64(units * 1000))
		fmt.Fprintf(w, `{"UnprocessedItems":{},"ConsumedCapacity":[{"TableName":%q,"CapacityUnits":%g}]}`, table, units)
	case "PutItem", "UpdateItem":
		var in struct {
			TableName string
			Item      attrs
			Key       attrs
		}
		if err := json.Unmarshal(body, &in); err != nil {
			http.Error(w, err.Error(), 400)
			return
		}
		units := s.itemWCU(in.Item)
		if in.Item == nil {
			units = s.itemWCU(in.Key)
		}
		s.wcu.Add(int64(units * 1000))
		fmt.Fprintf(w, `{"ConsumedCapacity":{"TableName":%q,"CapacityUnits":%g}}`, in.TableName, units)
	case "GetItem":
		fmt.Fprint(w, `{}`)
	case "Query":
		fmt.Fprint(w, `{"Items":[],"Count":0,"ScannedCount":0}`)
	default:
		w.WriteHeader(400)
		fmt.Fprintf(w, `{"__type":"com.amazonaws.dynamodb.v20120810#ValidationException","message":"ddbstub does not implement %s"}`, op)
	}
}

// itemWCU prices a put: one unit per KB of the item, rounded up, plus the
// same for the item's GSI copy when it has the GSI's key.
func (s *Server) itemWCU(item attrs) float64 {
	units := math.Ceil(float64(Size(item, nil)) / 1024)
	if s.GSIAttr != "" && item[s.GSIAttr] != nil {
		keep := map[string]bool{}
		for _, a := range append(append([]string{}, s.GSIKeys...), s.GSIProjected...) {
			keep[a] = true
		}
		units += math.Ceil(float64(Size(item, keep)) / 1024)
	}
	return max(units, 1)
}

// Size is an item's size as DynamoDB counts it (attribute names plus
// values), restricted to the attributes in keep when keep is not nil.
func Size(item attrs, keep map[string]bool) int {
	n := 0
	for name, v := range item {
		if keep != nil && !keep[name] {
			continue
		}
		n += len(name)
		for typ, raw := range v {
			// The JSON length of a value stands in for its size: cheap,
			// and off only by escape sequences.
			l := max(len(raw)-2, 0)
			switch typ {
			case "S":
				n += l
			case "N":
				n += l/2 + 1
			case "B":
				n += l * 3 / 4
			default:
				n += len(raw)
			}
		}
	}
	return n
}
