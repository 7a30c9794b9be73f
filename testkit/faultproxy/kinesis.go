package faultproxy

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
)

// Kinesis's per-entry error codes of PutRecords.
const (
	// EntryThrottled is a shard's write limit exceeded.
	EntryThrottled = "ProvisionedThroughputExceededException"
	// EntryInternalFailure is a fault of the service.
	EntryInternalFailure = "InternalFailure"
)

// Entry is what an EntryFault sees of one entry of a Kinesis PutRecords
// request.
type Entry struct {
	N            int64  // the request: 1 for the first PutRecords through the proxy, and so on
	Index        int    // the entry's position in the request
	Data         []byte // the record's data, decoded
	PartitionKey string
}

// EntryFault decides the fate of one PutRecords entry: the ErrorCode to
// answer it with (EntryThrottled, EntryInternalFailure), or "" to forward
// it to the stream.
type EntryFault func(Entry) string

// SetEntryFault has the proxy fail the PutRecords entries f picks, as
// Kinesis does when part of a request fails: the others go on to the
// stream in their order, and the answer splices the stream's results and
// the injected failures back into the request's order, with
// FailedRecordCount counting both. A Rule's Fault for the request comes
// first. nil forwards every entry.
func (p *Proxy) SetEntryFault(f EntryFault) {
	p.mu.Lock()
	p.entryFault = f
	p.mu.Unlock()
}

// isKinesis says whether r is a Kinesis request (X-Amz-Target
// Kinesis_20131202.Op).
func isKinesis(r *http.Request) bool {
	return strings.HasPrefix(r.Header.Get("X-Amz-Target"), "Kinesis_")
}

// writeKinesisFault answers with f in Kinesis's JSON 1.1 error shape.
func writeKinesisFault(w http.ResponseWriter, f *Fault) {
	w.Header().Set("Content-Type", "application/x-amz-json-1.1")
	w.WriteHeader(f.Status)
	msg := "injected by faultproxy"
	if f.Code == EntryThrottled {
		msg = "Rate exceeded for stream (injected by faultproxy)"
	}
	fmt.Fprintf(w, `{"__type":%q,"message":%q}`, f.Code, msg)
}

// putRecordsResult is one entry of a PutRecords answer.
type putRecordsResult struct {
	SequenceNumber string `json:"SequenceNumber,omitempty"`
	ShardID        string `json:"ShardId,omitempty"`
	ErrorCode      string `json:"ErrorCode,omitempty"`
	ErrorMessage   string `json:"ErrorMessage,omitempty"`
}

// putRecords forwards the entries f does not fail and answers the others
// with their ErrorCode. The request is signed, but kinesalite does not
// check signatures, so the body can change.
func (p *Proxy) putRecords(w http.ResponseWriter, r *http.Request, body []byte, n int64, f EntryFault) {
	var in map[string]json.RawMessage
	var entries []json.RawMessage
	if err := json.Unmarshal(body, &in); err != nil || json.Unmarshal(in["Records"], &entries) != nil {
		p.forward(w, r, body, nil) // let the stream refuse it
		return
	}
	codes := make([]string, len(entries))
	var fwd []json.RawMessage
	for i, raw := range entries {
		var e struct {
			Data         []byte
			PartitionKey string
		}
		if json.Unmarshal(raw, &e) == nil {
			codes[i] = f(Entry{N: n, Index: i, Data: e.Data, PartitionKey: e.PartitionKey})
		}
		if codes[i] == "" {
			fwd = append(fwd, raw)
		}
	}
	failed := len(entries) - len(fwd)
	p.EntriesFailed.Add(int64(failed))
	splice := func(stored []putRecordsResult, storedFailed int) []byte {
		out := struct {
			FailedRecordCount int
			Records           []putRecordsResult
		}{FailedRecordCount: failed + storedFailed}
		for _, code := range codes {
			if code != "" {
				out.Records = append(out.Records, putRecordsResult{ErrorCode: code, ErrorMessage: entryMessage(code)})
				continue
			}
			if len(stored) == 0 {
				return nil // the stream answered fewer entries than it was sent
			}
			out.Records, stored = append(out.Records, stored[0]), stored[1:]
		}
		b, _ := json.Marshal(out)
		return b
	}
	if len(fwd) == 0 {
		w.Header().Set("Content-Type", "application/x-amz-json-1.1")
		w.Write(splice(nil, 0))
		return
	}
	in["Records"], _ = json.Marshal(fwd)
	newBody, _ := json.Marshal(in)
	p.forward(w, r, newBody, func(b []byte) []byte {
		var got struct {
			FailedRecordCount int
			Records           []putRecordsResult
		}
		if json.Unmarshal(b, &got) != nil {
			return b
		}
		if out := splice(got.Records, got.FailedRecordCount); out != nil {
			return out
		}
		return b
	})
}

func entryMessage(code string) string {
	if code == EntryThrottled {
		return "Rate exceeded for shard in stream (injected by faultproxy)"
	}
	return "Internal service failure. (injected by faultproxy)"
}
