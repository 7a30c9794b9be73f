package devserver

import (
	"encoding/json"
	"fmt"
	"net/url"
	"time"

	"github.com/aws/aws-lambda-go/events"
)

// SampleNow is the moment the samples in events/ were written for: their
// times fall in the two days before it.
var SampleNow = time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)

// shiftEvents moves the "time" of every CloudEvent in body (one event or an
// array) by d. Bodies that are not JSON events are returned unchanged: they
// are samples of what gets quarantined.
func shiftEvents(body []byte, d time.Duration) []byte {
	var list []json.RawMessage
	if err := json.Unmarshal(body, &list); err == nil {
		for i, e := range list {
			list[i] = shiftEvent(e, d)
		}
		b, _ := json.Marshal(list)
		return b
	}
	return shiftEvent(body, d)
}

func shiftEvent(raw []byte, d time.Duration) []byte {
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil {
		return raw
	}
	var s string
	if json.Unmarshal(m["time"], &s) != nil {
		return raw
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return raw
	}
	m["time"], _ = json.Marshal(t.Add(d).Format(time.RFC3339Nano))
	b, err := json.Marshal(m)
	if err != nil {
		return raw
	}
	return b
}

// shiftKinesis moves a sample Kinesis batch by d: arrival times and the
// events' own times.
func shiftKinesis(raw []byte, d time.Duration) (events.KinesisEvent, error) {
	var ev events.KinesisEvent
	if err := json.Unmarshal(raw, &ev); err != nil {
		return ev, fmt.Errorf("sample Kinesis batch: %w", err)
	}
	for i := range ev.Records {
		k := &ev.Records[i].Kinesis
		k.ApproximateArrivalTimestamp.Time = k.ApproximateArrivalTimestamp.Add(d)
		k.Data = shiftEvents(k.Data, d)
	}
	return ev, nil
}

// shiftHTTP moves a sample HTTP API request by d.
func shiftHTTP(raw []byte, d time.Duration) (events.APIGatewayV2HTTPRequest, error) {
	var req events.APIGatewayV2HTTPRequest
	if err := json.Unmarshal(raw, &req); err != nil {
		return req, fmt.Errorf("sample HTTP API request: %w", err)
	}
	req.Body = string(shiftEvents([]byte(req.Body), d))
	req.RequestContext.TimeEpoch = time.UnixMilli(req.RequestContext.TimeEpoch).Add(d).UnixMilli()
	return req, nil
}

// shiftREST moves a sample REST API request by d.
func shiftREST(raw []byte, d time.Duration) (events.APIGatewayProxyRequest, error) {
	var req events.APIGatewayProxyRequest
	if err := json.Unmarshal(raw, &req); err != nil {
		return req, fmt.Errorf("sample REST API request: %w", err)
	}
	req.Body = string(shiftEvents([]byte(req.Body), d))
	req.RequestContext.RequestTimeEpoch = time.UnixMilli(req.RequestContext.RequestTimeEpoch).Add(d).UnixMilli()
	return req, nil
}

// shiftQuery moves the from and to of a sample query string by d.
func shiftQuery(raw string, d time.Duration) string {
	q, err := url.ParseQuery(raw)
	if err != nil {
		return raw
	}
	for _, k := range []string{"from", "to"} {
		if t, err := time.Parse(time.RFC3339Nano, q.Get(k)); err == nil {
			q.Set(k, t.Add(d).Format(time.RFC3339Nano))
		}
	}
	return q.Encode()
}
