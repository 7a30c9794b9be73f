package ingest

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/shardline/shardline/internal/item"
	"github.com/shardline/shardline/internal/schema"
)

func nested(levels int) string {
	return strings.Repeat("[", levels) + strings.Repeat("]", levels)
}

func manyEvents(n int) string {
	var b strings.Builder
	b.WriteByte('[')
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"id":"m%d","source":"bulk","type":"t"}`, i)
	}
	b.WriteByte(']')
	return b.String()
}

// TestBadInputThroughTheAPI: each hostile body gets its documented status and
// an error naming the field, and the table holds no event from it (rejected
// records are quarantined, refused requests leave nothing at all).
func TestBadInputThroughTheAPI(t *testing.T) {
	future := fixtureNow.Add(time.Hour).Format(time.RFC3339)
	past := fixtureNow.AddDate(-1, 0, 0).Format(time.RFC3339)
	cases := []struct {
		name        string
		body        string
		contentType string
		base64      bool
		status      int
		errField    string // the field the error names
		quarantined int
	}{
		{"invalid UTF-8", "{\"id\":\"\xff\",\"source\":\"s\",\"type\":\"t\"}", "application/json", false, 400, "body", 1},
		{"invalid UTF-8, base64", base64.StdEncoding.EncodeToString([]byte("\xfe\xff{}")), "application/json", true, 400, "body", 1},
		{"duplicate keys", `{"id":"1","source":"s","type":"t","source":"other"}`, "application/json", false, 400, "source", 1},
		{"10,000 levels deep", `{"id":"1","source":"s","type":"t","data":` + nested(10000) + `}`, "application/json", false, 400, "body", 1},
		{"huge number as id", `{"id":1e999999,"source":"s","type":"t"}`, "application/json", false, 400, "id", 1},
		{"10 MB body", `{"id":"1","source":"s","type":"t","data":"` + strings.Repeat("x", 10<<20) + `"}`, "application/json", false, 413, "body", 0},
		{"10 MB body, base64", base64.StdEncoding.EncodeToString(bytes.Repeat([]byte("x"), 10<<20)), "application/json", true, 413, "body", 0},
		{"10,000 events", manyEvents(10000), "application/cloudevents-batch+json", false, 413, "body", 0},
		{"empty body", "", "application/json", false, 400, "body", 1},
		{"null body", "null", "application/json", false, 400, "event", 1},
		{"array of nulls", "[null,null]", "application/json", false, 400, "event", 2},
		{"text/plain", `{"id":"1","source":"s","type":"t"}`, "text/plain", false, 415, "", 0},
		{"xml", `<event/>`, "application/xml", false, 415, "", 0},
		{"garbage content type", `{}`, "///", false, 415, "", 0},
		{"not base64", "%%%not base64%%%", "application/json", true, 400, "body", 0},
		{"far future", `{"id":"1","source":"s","type":"t","time":"` + future + `"}`, "application/json", false, 400, "time", 1},
		{"far past", `{"id":"1","source":"s","type":"t","time":"` + past + `"}`, "application/json", false, 400, "time", 1},
		{"year 0", `{"id":"1","source":"s","type":"t","time":"0000-01-01T00:00:00Z"}`, "application/json", false, 400, "time", 1},
		{"oversized event", `{"id":"1","source":"s","type":"t","data":"` + strings.Repeat("y", 70000) + `"}`, "application/json", false, 400, "event", 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t, false, nil)
			req := post(c.body, c.contentType)
			req.IsBase64Encoded = c.base64
			resp, err := e.h.HTTP(context.Background(), req)
			if err != nil {
				t.Fatal(err)
			}
			if resp.StatusCode != c.status {
				t.Fatalf("status %d, want %d: %.300s", resp.StatusCode, c.status, resp.Body)
			}
			var body struct {
				Rejected []Rejection `json:"rejected"`
				Error    string      `json:"error"`
			}
			if err := json.Unmarshal([]byte(resp.Body), &body); err != nil {
				t.Fatalf("body %.300s: %v", resp.Body, err)
			}
			msg := body.Error
			if len(body.Rejected) > 0 {
				msg = body.Rejected[0].Error
			}
			if c.errField != "" && !strings.HasPrefix(msg, c.errField+": ") {
				t.Fatalf("error %.200q does not name %q", msg, c.errField)
			}
			if msg == "" {
				t.Fatalf("no error message: %.300s", resp.Body)
			}
			if n := len(e.itemsIn(t, "E#")); n != 0 {
				t.Fatalf("%d events stored from a rejected request", n)
			}
			if n := len(e.itemsIn(t, "Q#")); n != c.quarantined {
				t.Fatalf("%d records quarantined, want %d", n, c.quarantined)
			}
		})
	}
}

// TestHugeNumbersKeepEveryDigit: numbers beyond float64 in data are stored
// as sent.
func TestHugeNumbersKeepEveryDigit(t *testing.T) {
	e := newEnv(t, false, nil)
	data := `{"big":123456789012345678901234567890123456789,"tiny":1e-999999,"neg":-0.000000000000000000000001}`
	resp, _ := e.h.HTTP(context.Background(), post(`{"id":"n","source":"s","type":"t","data":`+data+`}`, "application/json"))
	if resp.StatusCode != 202 {
		t.Fatalf("%d %s", resp.StatusCode, resp.Body)
	}
	items := e.itemsIn(t, "E#")
	if len(items) != 1 || !strings.Contains(s(items[0], schema.Event), `"data":`+data) {
		t.Fatalf("stored %v", items)
	}
}

// TestOneMiBKinesisRecords: a 1 MiB record, valid JSON or not, is
// quarantined whole (compressed) and not reported as a failure.
func TestOneMiBKinesisRecords(t *testing.T) {
	e := newEnv(t, false, nil)
	bigEvent := []byte(`{"id":"big","source":"s","type":"t","data":"` + strings.Repeat("z", 1<<20-60) + `"}`)
	garbage := bytes.Repeat([]byte("not json "), (1<<20)/9)
	resp, err := e.h.Kinesis(invocation(t), kinesisBatch(bigEvent, garbage))
	if err != nil || len(resp.BatchItemFailures) != 0 {
		t.Fatalf("%v %v", err, resp.BatchItemFailures)
	}
	q := e.itemsIn(t, "Q#")
	if len(q) != 2 {
		t.Fatalf("%d quarantined, want 2", len(q))
	}
	for _, it := range q {
		raw, whole, err := item.RawOf(it)
		if err != nil || !whole || !(bytes.Equal(raw, bigEvent) || bytes.Equal(raw, garbage)) {
			t.Fatalf("raw of %d bytes, whole %v, err %v, reason %q", len(raw), whole, err, s(it, schema.Reason))
		}
	}
}

// TestBadKinesisRecords: hostile record data is quarantined, never
// reported, never a crash.
func TestBadKinesisRecords(t *testing.T) {
	e := newEnv(t, false, nil)
	datas := [][]byte{
		nil, []byte(""), []byte("null"), []byte("\xff\xfe"), []byte(`{"id":"1","id":"2","source":"s","type":"t"}`),
		[]byte(`{"id":"1","source":"s","type":"t","data":` + nested(20000) + `}`),
		[]byte(`[` + strings.Repeat(`1,`, 5000) + `1]`),
		[]byte(`{"id":"1","source":"s","type":"t","time":"9999-12-31T23:59:59Z"}`),
	}
	resp, err := e.h.Kinesis(invocation(t), kinesisBatch(datas...))
	if err != nil || len(resp.BatchItemFailures) != 0 {
		t.Fatalf("%v %v", err, resp.BatchItemFailures)
	}
	if n := len(e.itemsIn(t, "E#")); n != 0 {
		t.Fatalf("%d events stored", n)
	}
	q := e.itemsIn(t, "Q#")
	if len(q) != len(datas) { // the array of 5,001 numbers is one record, quarantined whole
		t.Fatalf("%d quarantined, want %d", len(q), len(datas))
	}
}

// BenchmarkTenMegabyteBody reports what refusing a 10 MB body costs: it must
// be refused before it is copied or parsed.
func BenchmarkTenMegabyteBody(b *testing.B) {
	h := New(DefaultConfig("unused"), nil, Options{Now: func() time.Time { return fixtureNow }})
	for _, enc := range []bool{false, true} {
		body := `{"id":"1","source":"s","type":"t","data":"` + strings.Repeat("x", 10<<20) + `"}`
		if enc {
			body = base64.StdEncoding.EncodeToString([]byte(body))
		}
		b.Run(fmt.Sprintf("base64=%v", enc), func(b *testing.B) {
			req := events.APIGatewayV2HTTPRequest{Body: body, IsBase64Encoded: enc, RawPath: Route, Headers: map[string]string{"content-type": "application/json"}}
			req.RequestContext.HTTP.Method = "POST"
			b.ReportAllocs()
			for b.Loop() {
				if resp, _ := h.HTTP(context.Background(), req); resp.StatusCode != 413 {
					b.Fatal(resp.StatusCode)
				}
			}
		})
	}
}
