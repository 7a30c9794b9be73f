package ingest

import (
	"encoding/json"
	"fmt"

	"github.com/shardline/shardline/internal/cloudevent"
	"github.com/shardline/shardline/internal/echo"
)

// RejectedDetailBytes bounds the rejections an answer gives in full, in
// bytes of their JSON. Every rejected event is listed by its index, but past
// this many bytes without its id and reason (Response.ReasonsOmitted says
// how many), so that an answer stays far under Lambda's 6 MB response
// payload, in which JSON escaping grows a '<' of the body to 7 bytes. 1,000
// rejections of ordinary events (an id of 36 bytes, a reason of 100) fit
// it whole.
const RejectedDetailBytes = 512 << 10

// omittedReason is the error of a rejection listed without its reason.
var omittedReason = fmt.Sprintf("event: refused; its reason is left out of this answer (which gives %d KiB of reasons), "+
	"the quarantine keeps it", RejectedDetailBytes>>10)

// boundRejections lists rs in full while their JSON stays within
// RejectedDetailBytes, and the rest by index alone; omitted is how many
// lost their id and reason.
func boundRejections(rs []Rejection) (out []Rejection, omitted int) {
	size := 0
	for i, r := range rs {
		if size >= 0 {
			b, _ := json.Marshal(r) // a Rejection always encodes
			if size += len(b) + 1; size <= RejectedDetailBytes {
				continue
			}
			size = -1 // over: every later one loses its reason too
			out = append(make([]Rejection, 0, len(rs)), rs[:i]...)
		}
		out = append(out, Rejection{Index: r.Index, Error: omittedReason})
		omitted++
	}
	if out == nil {
		return rs, 0
	}
	return out, omitted
}

// idOf is the event's id, if raw is an object with a string id; one longer
// than an id may be is cut to that, saying so.
func idOf(raw []byte) string {
	var v struct {
		ID any `json:"id"`
	}
	if json.Unmarshal(raw, &v) != nil {
		return ""
	}
	s, _ := v.ID.(string)
	return echo.Cut(s, cloudevent.MaxAttrBytes)
}
