package cloudevent

import "time"

// checkAttrs checks the required attributes (present, non-empty strings,
// within MaxAttrBytes), specversion, and that data and data_base64 are not
// both sent.
func checkAttrs(ms []member, a attrs) error {
	for _, r := range []struct {
		name string
		i    int
	}{{"id", a.id}, {"source", a.source}, {"type", a.typ}} {
		if err := checkRequired(ms, r.name, r.i); err != nil {
			return err
		}
	}
	if a.specversion >= 0 && ms[a.specversion].val != nil && string(unquote(ms[a.specversion].val)) != "1.0" {
		return fieldErr("specversion", "is %q; only \"1.0\" is supported", unquote(ms[a.specversion].val))
	}
	if a.data >= 0 && a.dataB64 >= 0 && ms[a.dataB64].val != nil {
		return fieldErr("data_base64", "cannot be sent together with data")
	}
	return nil
}

// checkRequired checks the required attribute name, at i among ms.
func checkRequired(ms []member, name string, i int) error {
	switch {
	case i < 0 || ms[i].val == nil || len(ms[i].val) == 2:
		return fieldErr(name, "is required and must be a non-empty string")
	case len(unquote(ms[i].val)) > MaxAttrBytes:
		return fieldErr(name, "is %d bytes; the limit is %d", len(unquote(ms[i].val)), MaxAttrBytes)
	}
	return nil
}

// eventTime is the event's time in UTC, or stamp (and stamped) when it has
// none. It must lie within the retention window and at most MaxFuture
// ahead of now.
func eventTime(ms []member, a attrs, now, stamp time.Time, lim Limits) (t time.Time, stamped bool, err error) {
	if a.time >= 0 && ms[a.time].val != nil {
		s := unquote(ms[a.time].val)
		p, err := time.Parse(time.RFC3339Nano, string(s))
		if err != nil {
			return t, false, fieldErr("time", "%q is not an RFC 3339 timestamp such as 2006-01-02T15:04:05Z", s)
		}
		t = p.UTC()
	} else {
		t, stamped = stamp.UTC(), true
	}
	if t.After(now.Add(MaxFuture)) {
		return t, stamped, fieldErr("time", "%s is more than %v in the future", t.Format(time.RFC3339Nano), MaxFuture)
	}
	if lim.Retention > 0 && !t.After(now.Add(-lim.Retention)) {
		return t, stamped, fieldErr("time", "%s is older than the retention window of %v", t.Format(time.RFC3339Nano), lim.Retention)
	}
	return t, stamped, nil
}
