package cloudevent

import (
	"encoding/json"
	"strings"
	"time"
)

// normalise writes the normalised event: specversion "1.0", the required
// attributes, time in RFC 3339 UTC, then every other attribute in the order
// received, values byte for byte (compacted: numbers keep every digit). The
// event's id, source, type and subject are backed by the same string.
func normalise(ms []member, a attrs, t time.Time, stamped bool, size int) Event {
	var w eventWriter
	w.b.Grow(size + 64)
	w.b.WriteString(`{"specversion":"1.0"`)
	w.put("id", ms[a.id].val, 0)
	w.put("source", ms[a.source].val, 1)
	w.put("type", ms[a.typ].val, 2)
	w.b.WriteString(`,"time":"`)
	var tb [40]byte
	w.b.Write(t.AppendFormat(tb[:0], time.RFC3339Nano))
	w.b.WriteByte('"')
	for i, m := range ms {
		switch {
		case m.val == nil || i == a.id || i == a.source || i == a.typ || i == a.time || i == a.specversion:
		case i == a.subject:
			w.put("subject", m.val, 3)
		default:
			w.b.WriteByte(',')
			w.b.Write(m.key)
			w.b.WriteByte(':')
			compact(&w.b, m.val)
		}
	}
	w.b.WriteByte('}')
	out := w.b.String()
	ev := Event{Time: t, Stamped: stamped, JSON: out}
	ev.ID, ev.Source, ev.Type = w.str(out, 0), w.str(out, 1), w.str(out, 2)
	if a.subject >= 0 && ms[a.subject].val != nil {
		ev.Subject = w.str(out, 3)
	}
	return ev
}

// eventWriter builds a normalised event and remembers where the values of
// id, source, type and subject were written.
type eventWriter struct {
	b  strings.Builder
	at [4][2]int
}

// put writes val under name, and where it went in slot.
func (w *eventWriter) put(name string, val []byte, slot int) {
	w.b.WriteString(`,"` + name + `":`)
	w.at[slot][0] = w.b.Len()
	compact(&w.b, val)
	w.at[slot][1] = w.b.Len()
}

// str decodes the string value written in slot of out; without escapes it
// shares out's memory.
func (w *eventWriter) str(out string, slot int) string {
	v := out[w.at[slot][0]:w.at[slot][1]]
	if len(v) < 2 {
		return ""
	}
	if strings.IndexByte(v, '\\') < 0 {
		return v[1 : len(v)-1]
	}
	var s string
	_ = json.Unmarshal([]byte(v), &s)
	return s
}
