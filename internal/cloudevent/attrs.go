package cloudevent

import (
	"bytes"
	"fmt"
	"slices"
	"strings"

	"github.com/shardline/shardline/internal/echo"
)

// attrs says where the attributes with a fixed meaning are among an event's
// members; -1 for an absent one.
type attrs struct {
	id, source, typ, specversion, time, subject, contentType, schema, data, dataB64 int
}

// indexAttrs finds the attributes with a fixed meaning and checks every
// member's name and, for the context attributes, that its value is a
// string. It refuses duplicate names: which of two "id"s is the event's is
// ambiguous, and an ambiguity in an identity is a way to smuggle one event
// past another's checks. An optional attribute set to null is made absent
// (its value set to nil).
func indexAttrs(ms []member) (attrs, error) {
	a := attrs{-1, -1, -1, -1, -1, -1, -1, -1, -1, -1}
	dup := duplicateAt(ms, bytes.Compare)
	for i := range ms {
		if i == dup {
			return a, fieldErr(nameLabel(ms[i].name), "appears more than once")
		}
		if err := checkName(ms[i].name); err != nil {
			return a, err
		}
		a.note(string(ms[i].name), i)
		if err := checkStringAttr(&ms[i]); err != nil {
			return a, err
		}
	}
	return a, nil
}

// checkName refuses a member name that is not a CloudEvents attribute name:
// lower-case ASCII letters and digits (core spec 1.0.2, "Attribute Naming
// Convention"), or data_base64 (JSON format). Names that differ only in
// case would otherwise be two members here and one attribute to a
// case-insensitive reader.
func checkName(name []byte) error {
	if validName(name) {
		return nil
	}
	if len(name) == 0 {
		return fieldErr("event", "has a member with an empty name; CloudEvents attribute names are lower-case letters a-z and digits 0-9")
	}
	problem := "is not a valid attribute name: CloudEvents attribute names are lower-case letters a-z and digits 0-9"
	if lower := bytes.ToLower(name); validName(lower) {
		problem += fmt.Sprintf("; did you mean %s?", echo.Quote(string(lower)))
	} else {
		problem += "; rename it"
	}
	return fieldErr(nameLabel(name), "%s", problem)
}

func validName(name []byte) bool {
	if string(name) == "data_base64" {
		return true
	}
	for _, c := range name {
		if (c < 'a' || c > 'z') && (c < '0' || c > '9') {
			return false
		}
	}
	return len(name) > 0
}

// nameLabel is a member name fit to head an error: blank names are "event",
// long ones are cut to 64 bytes.
func nameLabel(name []byte) string {
	const most = 64
	if len(name) <= most {
		return fieldName(string(name))
	}
	return strings.ToValidUTF8(string(name[:most]), "") + "…"
}

// note records that the member at i is named name.
func (a *attrs) note(name string, i int) {
	switch name {
	case "id":
		a.id = i
	case "source":
		a.source = i
	case "type":
		a.typ = i
	case "specversion":
		a.specversion = i
	case "time":
		a.time = i
	case "subject":
		a.subject = i
	case "datacontenttype":
		a.contentType = i
	case "dataschema":
		a.schema = i
	case "data":
		a.data = i
	case "data_base64":
		a.dataB64 = i
	}
}

// isStringAttr tells the context attributes whose values are strings (and
// data_base64), which null makes absent.
func isStringAttr(name string) bool {
	switch name {
	case "id", "source", "type", "specversion", "time", "subject", "datacontenttype", "dataschema", "data_base64":
		return true
	}
	return false
}

// checkStringAttr makes a string attribute set to null absent and refuses
// one whose value is not a string.
func checkStringAttr(m *member) error {
	if !isStringAttr(string(m.name)) {
		return nil
	}
	if isNull(m.val) {
		m.val = nil
	}
	if m.val != nil && m.val[0] != '"' {
		return fieldErr(string(m.name), "must be a string")
	}
	return nil
}

// smallObject is the most members whose names duplicateAt compares pair by
// pair: up to here that is cheaper than sorting, and allocates nothing.
const smallObject = 16

// duplicateAt is the index of the first member whose name an earlier member
// already has, or -1. cmp compares names (bytes.Compare; a test counts its
// calls). Past smallObject members it sorts the indexes by name, so an event
// of n members costs O(n log n) comparisons, not n²/2.
func duplicateAt(ms []member, cmp func(a, b []byte) int) int {
	if len(ms) <= smallObject {
		for i := range ms {
			for j := range i {
				if cmp(ms[j].name, ms[i].name) == 0 {
					return i
				}
			}
		}
		return -1
	}
	order := make([]int32, len(ms)) // an event is at most MaxBytesLimit bytes
	for i := range order {
		order[i] = int32(i)
	}
	slices.SortFunc(order, func(a, b int32) int {
		if c := cmp(ms[a].name, ms[b].name); c != 0 {
			return c
		}
		return int(a - b)
	})
	// Equal names are now adjacent, in the order received: every element
	// that equals its predecessor is a repeat; report the earliest.
	first := -1
	for k := 1; k < len(order); k++ {
		if i := int(order[k]); cmp(ms[order[k-1]].name, ms[i].name) == 0 && (first < 0 || i < first) {
			first = i
		}
	}
	return first
}

func isNull(v []byte) bool { return len(v) == 4 && string(v) == "null" }

// fieldName is the field an error about the member named k names: the
// event itself when the name is blank.
func fieldName(k string) string {
	if strings.TrimSpace(k) == "" {
		return "event"
	}
	return k
}
