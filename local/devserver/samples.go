package devserver

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/shardline/shardline/internal/ingest"
	"github.com/shardline/shardline/internal/query"
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

// sendSamples sends the samples in dir through the handlers, moved in time
// so that the newest is a little in the past.
func sendSamples(ctx context.Context, out io.Writer, h *ingest.Handler, base, dir string) error {
	shift := time.Since(SampleNow).Truncate(time.Second)
	fmt.Fprintf(out, "\nreplaying the samples in %s, their times moved by %v so that they end now\n", dir, shift.Round(time.Minute))

	raw, err := os.ReadFile(filepath.Join(dir, "kinesis-batch.json"))
	if err != nil {
		return fmt.Errorf("read samples: %w", err)
	}
	kev, err := shiftKinesis(raw, shift)
	if err != nil {
		return err
	}
	kctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	kresp, err := h.Kinesis(kctx, kev)
	cancel()
	if err != nil {
		return fmt.Errorf("replay Kinesis batch: %w", err)
	}
	fmt.Fprintf(out, "  kinesis-batch.json: %d records, %d reported for retry\n", len(kev.Records), len(kresp.BatchItemFailures))

	raw, err = os.ReadFile(filepath.Join(dir, "api-ingest-v2.json"))
	if err != nil {
		return fmt.Errorf("read samples: %w", err)
	}
	v2, err := shiftHTTP(raw, shift)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+ingest.Route, strings.NewReader(v2.Body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", v2.Headers["content-type"])
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("replay API request: %w", err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	fmt.Fprintf(out, "  api-ingest-v2.json: POST %s -> %d %s\n", ingest.Route, resp.StatusCode, bytes.TrimSpace(body))

	raw, err = os.ReadFile(filepath.Join(dir, "rest-ingest-v1.json"))
	if err != nil {
		return fmt.Errorf("read samples: %w", err)
	}
	v1, err := shiftREST(raw, shift)
	if err != nil {
		return err
	}
	v1resp, err := h.REST(ctx, v1)
	if err != nil {
		return fmt.Errorf("replay REST request: %w", err)
	}
	fmt.Fprintf(out, "  rest-ingest-v1.json: %d %s\n", v1resp.StatusCode, v1resp.Body)
	return nil
}

// sampleQuery runs the sample query in dir against the server and prints
// the page it got.
func sampleQuery(ctx context.Context, out io.Writer, base, dir string) error {
	raw, err := os.ReadFile(filepath.Join(dir, "api-query-v2.json"))
	if err != nil {
		return fmt.Errorf("read samples: %w", err)
	}
	var req events.APIGatewayV2HTTPRequest
	if err := json.Unmarshal(raw, &req); err != nil {
		return fmt.Errorf("sample query: %w", err)
	}
	u := base + req.RawPath + "?" + shiftQuery(req.RawQueryString, time.Since(SampleNow).Truncate(time.Second))
	hreq, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(hreq)
	if err != nil {
		return fmt.Errorf("sample query: %w", err)
	}
	defer resp.Body.Close()
	var page query.EventsResponse
	if err := json.NewDecoder(resp.Body).Decode(&page); err != nil || resp.StatusCode != http.StatusOK {
		return fmt.Errorf("sample query: %d %v", resp.StatusCode, err)
	}
	fmt.Fprintf(out, "\nGET %s\n  -> %d events, plan %s (%s), %d requests, %.1f RCU\n",
		strings.TrimPrefix(u, base), len(page.Events), page.Plan.Path, page.Plan.Reason, page.Plan.Requests, page.Plan.ConsumedRCU)
	for _, e := range page.Events {
		fmt.Fprintf(out, "     %s\n", e)
	}
	if page.NextCursor != "" {
		fmt.Fprintf(out, "  next page: add &cursor=%s\n", page.NextCursor)
	}
	return nil
}
