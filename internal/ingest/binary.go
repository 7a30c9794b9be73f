package ingest

import (
	"errors"

	"github.com/shardline/shardline/internal/cloudevent"
)

// parseBinary reads the one event of a request in the CloudEvents HTTP
// binary content mode: attributes in ce-* headers, data in the body, its
// media type in Content-Type (cloudevent.FromBinary). The event is then
// what a structured request with the same attributes and data would be,
// and is checked the same way; a refused one is quarantined in structured
// form, and its error names the header or the body at fault.
func (h *Handler) parseBinary(header map[string]string, body []byte, req apiRequest) parsed {
	raw, err := cloudevent.FromBinary(header, body)
	if err == nil {
		var e cloudevent.Event
		if e, err = cloudevent.ParseElement(raw, req.now, req.received, h.limits()); err == nil {
			return parsed{units: []unit{{group: 0, event: &e, origin: req.origin, received: req.received}}}
		}
		err = inBinaryTerms(err)
	}
	return parsed{
		units:      []unit{rejectedUnit(0, raw, err.Error(), req.origin, req.received)},
		rejections: []Rejection{{Index: 0, ID: idOf(raw), Error: err.Error()}},
	}
}

// inBinaryTerms names, in a ParseElement error, the header that held the
// attribute at fault: "ce-id: is required", not "id: is required".
func inBinaryTerms(err error) error {
	var fe *cloudevent.FieldError
	if !errors.As(err, &fe) {
		return err
	}
	return &cloudevent.FieldError{Field: cloudevent.BinaryField(fe.Field), Problem: fe.Problem}
}
