package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"reflect"
	"testing"
	"time"

	cloudevents "github.com/cloudevents/sdk-go/v2"
	cehttp "github.com/cloudevents/sdk-go/v2/protocol/http"

	"github.com/shardline/shardline/local/devserver"
	"github.com/shardline/shardline/testkit/openapitest"
	"github.com/shardline/shardline/testkit/testddb"
)

func TestMain(m *testing.M) { testddb.Main(m) }

// serve runs the local server (the real handlers behind this package's Mux,
// on DynamoDB Local) for the test and returns its URL.
func serve(t *testing.T) string {
	t.Helper()
	base, stop, err := devserver.Serve(context.Background(), devserver.Options{
		Addr:     "127.0.0.1:0",
		Endpoint: testddb.Endpoint(t),
		Table:    fmt.Sprintf("sdk-%d", time.Now().UnixNano()),
		Getenv:   func(string) string { return "" },
		Out:      io.Discard,
	})
	if err != nil {
		t.Fatalf("devserver: %v", err)
	}
	t.Cleanup(func() {
		if err := stop(); err != nil {
			t.Errorf("devserver: %v", err)
		}
	})
	return base
}

// sdkEvents are events the way a producer builds them with the SDK: JSON
// data with a number past float64's precision, UTF-8 text, raw bytes, no
// data at all; ids and subjects with /, # and spaces; extensions.
func sdkEvents(t *testing.T, source string) []cloudevents.Event {
	at := time.Now().UTC().Add(-time.Minute).Truncate(time.Millisecond)
	mk := func(id string, n int) cloudevents.Event {
		ev := cloudevents.NewEvent()
		ev.SetID(id)
		ev.SetSource(source)
		ev.SetType("com.example.order.created")
		ev.SetTime(at.Add(time.Duration(n) * time.Millisecond))
		ev.SetSubject("truck/DE 0001 #" + id)
		ev.SetExtension("traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
		ev.SetExtension("partitionkey", "p-"+id)
		return ev
	}
	evs := []cloudevents.Event{mk("ord/1 #json", 0), mk("ord/2 #text", 1), mk("ord/3 #bytes", 2), mk("ord/4 #none", 3)}
	for _, err := range []error{
		evs[0].SetData(cloudevents.ApplicationJSON, json.RawMessage(`{"amount":12345678901234567890,"lines":[{"sku":"a","qty":2.50}],"note":null}`)),
		evs[1].SetData("text/plain; charset=utf-8", "grüße, 日本 <&> \"quoted\""),
		evs[2].SetData("application/octet-stream", []byte{0, 0xff, 0xfe, 'x', '\n'}),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	return evs
}

// TestGoSDK sends events with the official CloudEvents Go SDK in each of
// its modes — binary (client.Send's default), structured, and batched —
// reads them back through GET /v1/events, and compares each stored event
// with the SDK's own JSON form of the event sent.
func TestGoSDK(t *testing.T) {
	base := serve(t)
	target := base + "/v1/events"
	// Every exchange, the SDK's included, is checked against the OpenAPI document.
	checked := openapitest.Client(t, openapitest.Any)
	client, err := cloudevents.NewClientHTTP(cloudevents.WithTarget(target), cehttp.WithRoundTripper(checked.Transport))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, mode := range []string{"binary", "structured", "batch"} {
		t.Run(mode, func(t *testing.T) {
			source := "sdk-go/" + mode
			sent := sdkEvents(t, source)
			switch mode {
			case "binary":
				for _, ev := range sent {
					expectAccepted(t, client.Send(ctx, ev))
				}
			case "structured":
				for _, ev := range sent {
					expectAccepted(t, client.Send(cloudevents.WithEncodingStructured(ctx), ev))
				}
			case "batch":
				req, err := cehttp.NewHTTPRequestFromEvents(ctx, target, sent)
				if err != nil {
					t.Fatal(err)
				}
				resp, err := checked.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 202 || string(body) != fmt.Sprintf(`{"accepted":%d,"rejected":[]}`, len(sent)) {
					t.Fatalf("batch: %d %s", resp.StatusCode, body)
				}
			}
			compareStored(t, readBack(t, base, source), sent)
		})
	}
}

func expectAccepted(t *testing.T, res error) {
	t.Helper()
	var hr *cehttp.Result
	if !cloudevents.IsACK(res) || !cloudevents.ResultAs(res, &hr) || hr.StatusCode != http.StatusAccepted {
		t.Fatalf("Send: %v", res)
	}
}

// readBack is every event of source, oldest first, read with consistent=true.
func readBack(t *testing.T, base, source string) []json.RawMessage {
	t.Helper()
	resp, err := openapitest.Client(t, openapitest.Any).Get(base + "/v1/events?consistent=true&order=asc&source=" + url.QueryEscape(source))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var page struct {
		Events []json.RawMessage `json:"events"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&page); err != nil || resp.StatusCode != 200 {
		t.Fatalf("GET /v1/events: %d %v", resp.StatusCode, err)
	}
	return page.Events
}

// compareStored checks that the events stored are those sent: as JSON, the
// same members and values as the SDK writes for the event (so the data is
// the same JSON value, string or base64), and, read by the SDK, the same
// attributes and data bytes.
func compareStored(t *testing.T, stored []json.RawMessage, sent []cloudevents.Event) {
	t.Helper()
	if len(stored) != len(sent) {
		t.Fatalf("%d events read back, %d sent", len(stored), len(sent))
	}
	for i, raw := range stored {
		want, err := json.Marshal(sent[i])
		if err != nil {
			t.Fatal(err)
		}
		if got, exp := decode(t, raw), decode(t, want); !reflect.DeepEqual(got, exp) {
			t.Errorf("event %d stored as\n %s\nthe SDK writes it\n %s", i, raw, want)
		}
		var back cloudevents.Event
		if err := json.Unmarshal(raw, &back); err != nil {
			t.Fatalf("the SDK cannot read stored event %s: %v", raw, err)
		}
		s := sent[i]
		if back.ID() != s.ID() || back.Source() != s.Source() || back.Type() != s.Type() || back.Subject() != s.Subject() ||
			!back.Time().Equal(s.Time()) || back.DataContentType() != s.DataContentType() ||
			!reflect.DeepEqual(back.Extensions(), s.Extensions()) || !bytes.Equal(back.Data(), s.Data()) {
			t.Errorf("event %d read back by the SDK\n %v\nsent\n %v", i, back, s)
		}
	}
}

func decode(t *testing.T, b []byte) map[string]any {
	t.Helper()
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var m map[string]any
	if err := d.Decode(&m); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	return m
}
