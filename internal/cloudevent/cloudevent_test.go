package cloudevent

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
)

var (
	now = time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	lim = Limits{MaxBytes: DefaultMaxBytes, Retention: DefaultRetention}
)

func TestParseNormalises(t *testing.T) {
	raw := `{ "id":"e-1", "source":"orders", "type":"order.created", "time":"2026-11-22T13:00:00.5+01:00",
	  "subject":"o/42", "traceparent":"00-ab", "data": {"amount": 12345678901234567890, "n": [1, 2.50, {"x": null}]} }`
	ev, err := Parse([]byte(raw), now, now, lim)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"specversion":"1.0","id":"e-1","source":"orders","type":"order.created","time":"2026-11-22T12:00:00.5Z",` +
		`"subject":"o/42","traceparent":"00-ab","data":{"amount":12345678901234567890,"n":[1,2.50,{"x":null}]}}`
	if string(ev.JSON) != want {
		t.Fatalf("normalised\n got %s\nwant %s", ev.JSON, want)
	}
	if ev.ID != "e-1" || ev.Source != "orders" || ev.Type != "order.created" || ev.Subject != "o/42" || ev.Stamped ||
		!ev.Time.Equal(time.Date(2026, 11, 22, 12, 0, 0, 5e8, time.UTC)) {
		t.Fatalf("parsed %+v", ev)
	}
}

func TestParseStampsMissingTime(t *testing.T) {
	stamp := now.Add(-time.Minute)
	ev, err := Parse([]byte(`{"id":"1","source":"s","type":"t"}`), now, stamp, lim)
	if err != nil {
		t.Fatal(err)
	}
	if !ev.Stamped || !ev.Time.Equal(stamp) || !strings.Contains(string(ev.JSON), `"time":"2026-11-22T11:59:00Z"`) {
		t.Fatalf("stamped %+v %s", ev, ev.JSON)
	}
}

func TestParseKeepsEscapesAndUnicode(t *testing.T) {
	raw := `{"id":"a#b%c/ d","source":"\u65e5\u672c#x","type":"t","data":"\u00e9\n"}`
	ev, err := Parse([]byte(raw), now, now, lim)
	if err != nil {
		t.Fatal(err)
	}
	if ev.ID != "a#b%c/ d" || ev.Source != "日本#x" {
		t.Fatalf("decoded %q %q", ev.ID, ev.Source)
	}
	var back map[string]any
	if err := json.Unmarshal([]byte(ev.JSON), &back); err != nil || back["data"] != "é\n" || back["source"] != "日本#x" {
		t.Fatalf("round trip %v %v", back, err)
	}
}

func TestParseErrorsNameTheField(t *testing.T) {
	long := strings.Repeat("x", 257)
	cases := []struct{ raw, field string }{
		{`{"source":"s","type":"t"}`, "id"},
		{`{"id":"","source":"s","type":"t"}`, "id"},
		{`{"id":1,"source":"s","type":"t"}`, "id"},
		{`{"id":"` + long + `","source":"s","type":"t"}`, "id"},
		{`{"id":"1","type":"t"}`, "source"},
		{`{"id":"1","source":"` + long + `","type":"t"}`, "source"},
		{`{"id":"1","source":"s"}`, "type"},
		{`{"id":"1","source":"s","type":null}`, "type"},
		{`{"id":"1","source":"s","type":"t","specversion":"0.3"}`, "specversion"},
		{`{"id":"1","source":"s","type":"t","time":"yesterday"}`, "time"},
		{`{"id":"1","source":"s","type":"t","time":"2026-11-22T12:06:00Z"}`, "time"},
		{`{"id":"1","source":"s","type":"t","time":"2026-10-01T00:00:00Z"}`, "time"},
		{`{"id":"1","source":"s","type":"t","subject":5}`, "subject"},
		{`{"id":"1","source":"s","type":"t","data":1,"data_base64":"AA=="}`, "data_base64"},
		{`{"id":"1","id":"2","source":"s","type":"t"}`, "id"},
		{`[1]`, "event"},
		{`"x"`, "event"},
		{`{"id":"1"`, "event"},
		{`{"id":"1","source":"s","type":"t"} {}`, "event"},
		{"{\"id\":\"\xff\",\"source\":\"s\",\"type\":\"t\"}", "event"},
		{`{"id":"1","source":"s","type":"t","data":"` + strings.Repeat("x", DefaultMaxBytes) + `"}`, "event"},
	}
	for _, c := range cases {
		_, err := Parse([]byte(c.raw), now, now, lim)
		var fe *FieldError
		if !errors.As(err, &fe) || fe.Field != c.field {
			t.Errorf("Parse(%.80s) = %v, want an error naming %q", c.raw, err, c.field)
		}
	}
}

func TestParseAcceptsEdgesOfTheWindow(t *testing.T) {
	for _, tm := range []time.Time{now.Add(MaxFuture), now.Add(-DefaultRetention + time.Second)} {
		raw := `{"id":"1","source":"s","type":"t","time":"` + tm.Format(time.RFC3339) + `"}`
		if _, err := Parse([]byte(raw), now, now, lim); err != nil {
			t.Errorf("time %v rejected: %v", tm, err)
		}
	}
}

func TestSplit(t *testing.T) {
	for body, want := range map[string]int{
		`{"id":"1"}`:             1,
		` [ {"id":"1"}, 5, {} ]`: 3,
		`[]`:                     0,
	} {
		got, array, err := Split([]byte(body))
		if err != nil || len(got) != want || array != (body != `{"id":"1"}`) {
			t.Errorf("Split(%s) = %d, %v, %v; want %d", body, len(got), array, err, want)
		}
	}
	for _, body := range []string{``, `  `, `[{"id":1}`, `{"id"`, "[\"\xff\"]"} {
		var fe *FieldError
		if _, _, err := Split([]byte(body)); !errors.As(err, &fe) || fe.Field != "body" {
			t.Errorf("Split(%q) = %v, want a body error", body, err)
		}
	}
}

// BenchmarkParse is parsing and normalising one ~500-byte event.
func BenchmarkParse(b *testing.B) {
	raw := []byte(`{"data":{"driver":"d-0042","engine":{"oil_bar":3.9,"rpm":1850,"temp_c":88.5},"fuel":0.62,"lat":52.5200066,` +
		`"lon":13.404954,"note":"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx","odometer":123456789,"speed_kmh":71.5,"tags":["eu","long-haul","reefer"]},` +
		`"datacontenttype":"application/json","id":"evt-00000001","source":"iot/fleet-7","specversion":"1.0","subject":"truck/DE-0001",` +
		`"time":"2026-11-22T11:59:59.999Z","traceparent":"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01","type":"com.example.telemetry.reading"}`)
	b.ReportAllocs()
	b.SetBytes(int64(len(raw)))
	for b.Loop() {
		if _, err := Parse(raw, now, now, lim); err != nil {
			b.Fatal(err)
		}
	}
}
