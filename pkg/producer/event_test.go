package producer

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// TestPrepare: an id and a time are added only when missing, and the
// rest is kept byte for byte (no HTML escaping, every digit of a number).
func TestPrepare(t *testing.T) {
	now := time.Date(2026, 11, 23, 8, 0, 0, 5, time.UTC)
	data := `{"n":12345678901234567890,"s":"<a&b>","x":[1.50,{"y":null}]}`
	for _, tc := range []struct {
		name, in string
		keepID   bool
		wantTime string
	}{
		{"none", `{"source":"s","type":"t","data":` + data + `}`, false, "2026-11-23T08:00:00.000000005Z"},
		{"empty id, null time", `{"id":"","time":null,"source":"s","type":"t","data":` + data + `}`, false, "2026-11-23T08:00:00.000000005Z"},
		{"both", `{"id":"x/1#2","time":"2026-01-01T00:00:00Z","source":"s","type":"t","data":` + data + `}`, true, "2026-01-01T00:00:00Z"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, err := prepare(json.RawMessage(tc.in), now)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(e.data), `"data":`+data) {
				t.Fatalf("data changed: %s", e.data)
			}
			var got struct{ ID, Time string }
			json.Unmarshal(e.data, &got)
			if got.ID != e.id || got.Time != tc.wantTime || tc.keepID != (e.id == "x/1#2") || len(e.id) == 0 {
				t.Fatalf("id %q (event says %q), time %q", e.id, got.ID, got.Time)
			}
		})
	}
	for _, bad := range []any{"[1]", "null", `{"id":5}`, "nope"} {
		if _, err := prepare(bad, now); err == nil {
			t.Errorf("prepare(%v): no error", bad)
		}
	}
}

// TestStamp: Stamp is what Put and Send send, and stamping again changes
// nothing.
func TestStamp(t *testing.T) {
	now := time.Date(2026, 11, 23, 8, 0, 0, 0, time.UTC)
	id, data, err := Stamp(`{"source":"s","type":"t","data":{"n":12345678901234567890}}`, now)
	if err != nil || id == "" || !strings.Contains(string(data), `"time":"2026-11-23T08:00:00Z"`) || !strings.Contains(string(data), `12345678901234567890`) {
		t.Fatalf("Stamp: %q %s %v", id, data, err)
	}
	id2, data2, err := Stamp(data, now.Add(time.Hour))
	if err != nil || id2 != id || string(data2) != string(data) {
		t.Fatalf("Stamp again: %q %s %v", id2, data2, err)
	}
	if _, _, err := Stamp(`[1]`, now); err == nil {
		t.Fatal("Stamp of an array: no error")
	}
}
