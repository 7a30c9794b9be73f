package cloudevent

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"maps"
	"mime"
	"net/url"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/shardline/shardline/internal/echo"
)

// FromBinary reads an event sent in the CloudEvents HTTP binary content mode
// (HTTP protocol binding 1.0.2, section 3.1) and writes it in JSON structured
// form, ready for ParseElement:
//
//   - every header named ce-<name>, in any case, is the attribute <name>;
//     its value is unquoted if it is a quoted-string, then percent-decoded
//     once, and must then be UTF-8 (3.1.3.2). Header values are strings, so
//     every attribute is stored as a string, extensions included;
//   - Content-Type is datacontenttype, and a ce-datacontenttype header is
//     refused (3.1.1);
//   - the body is data, stored as the JSON format says (3.1.1 there): JSON
//     (application/json, text/json, */*+json) as the JSON value itself; text
//     (text/*, XML, or a declared UTF-8 charset) that is UTF-8 as a string;
//     any other bytes as data_base64. An empty body is no data.
//
// The event returned is always a JSON object, even with err set (a *FieldError
// naming the header at fault), so that a refused event can be quarantined
// whole. Names in errors that ParseElement returns for it are attribute
// names: BinaryField turns them into what the sender sent.
func FromBinary(header map[string]string, body []byte) (event []byte, err error) {
	var as []attr
	for _, k := range slices.Sorted(maps.Keys(header)) { // a stable first error
		a, ok, e := headerAttr(k, header[k])
		if err == nil {
			err = e
		}
		if ok {
			as = append(as, a)
		}
	}
	slices.SortStableFunc(as, func(a, b attr) int { return compareAttrs(a.name, b.name) })
	w := newObjectWriter()
	for _, a := range as {
		w.str(a.name, a.value)
	}
	name, value, e := binaryData(contentTypeOf(header), body)
	if err == nil {
		err = e
	}
	if name != "" {
		w.raw(name, value)
	}
	return w.close(), err
}

// BinaryField is where the attribute field (of a FieldError from
// ParseElement) was in a binary-mode request: ce-id for id, Content-Type
// for datacontenttype, the body for data.
func BinaryField(field string) string {
	switch field {
	case "event", "body":
		return field
	case "data", "data_base64":
		return "body"
	case "datacontenttype":
		return "Content-Type"
	}
	return "ce-" + field
}

// attr is an attribute read from a header.
type attr struct{ name, value string }

// headerAttr reads the attribute in header k, if it holds one (ok). A value
// that cannot be decoded is kept as received, with err set.
func headerAttr(k, v string) (a attr, ok bool, err error) {
	lk := strings.ToLower(k)
	switch {
	case lk == "content-type":
		return attr{"datacontenttype", trimOWS(v)}, trimOWS(v) != "", nil
	case lk == "ce-datacontenttype":
		return a, false, fieldErr(lk, "must not be sent in binary mode: the data's media type is the Content-Type header")
	case !strings.HasPrefix(lk, "ce-"):
		return a, false, nil
	}
	a = attr{name: lk[len("ce-"):], value: trimOWS(v)}
	decoded, derr := url.PathUnescape(unquoteHeader(a.value))
	switch {
	case derr != nil:
		return a, true, fieldErr(nameLabel([]byte(lk)), "is not valid percent-encoding (%v); encode %% as %%25", derr)
	case !utf8.ValidString(decoded):
		return a, true, fieldErr(nameLabel([]byte(lk)), "percent-decodes to bytes that are not UTF-8")
	}
	a.value = decoded
	return a, true, nil
}

// unquoteHeader undoes an RFC 7230 quoted-string (3.2.6), which older
// senders use; other values are returned as they are.
func unquoteHeader(v string) string {
	if len(v) < 2 || v[0] != '"' || v[len(v)-1] != '"' {
		return v
	}
	var b strings.Builder
	for i := 1; i < len(v)-1; i++ {
		if v[i] == '\\' && i+1 < len(v)-1 {
			i++ // a quoted-pair: the next byte, as it is
		}
		b.WriteByte(v[i])
	}
	return b.String()
}

func trimOWS(v string) string { return strings.Trim(v, " \t") }

func contentTypeOf(header map[string]string) string {
	for k, v := range header {
		if strings.EqualFold(k, "Content-Type") {
			return trimOWS(v)
		}
	}
	return ""
}

// compareAttrs orders the structured event the way ParseElement writes
// one: the attributes with fixed meaning first, then extensions by name.
func compareAttrs(a, b string) int {
	if ra, rb := attrRank(a), attrRank(b); ra != rb {
		return ra - rb
	}
	return strings.Compare(a, b)
}

func attrRank(name string) int {
	i := slices.Index([]string{"specversion", "id", "source", "type", "time", "subject", "datacontenttype", "dataschema"}, name)
	if i < 0 {
		return 99
	}
	return i
}

// binaryData is the member (data or data_base64) and its JSON value for a
// body of media type contentType; name is empty for no body.
func binaryData(contentType string, body []byte) (name string, value []byte, err error) {
	if len(body) == 0 {
		return "", nil, nil
	}
	mt, params, perr := mime.ParseMediaType(contentType)
	isJSON := utf8.Valid(body) && validJSON(body)
	switch {
	case contentType == "" && isJSON: // the JSON format's default
		return "data", body, nil
	case perr == nil && jsonMedia(mt) && !isJSON:
		return "data_base64", base64JSON(body), fieldErr("body", "is not valid JSON, though Content-Type %s says it is: %s", echo.Quote(contentType), notJSON(body))
	case perr == nil && jsonMedia(mt):
		return "data", body, nil
	case perr == nil && textMedia(mt, params) && utf8.Valid(body):
		return "data", jsonString(string(body)), nil
	}
	return "data_base64", base64JSON(body), nil
}

func jsonMedia(mt string) bool {
	return mt == "application/json" || mt == "text/json" || strings.HasSuffix(mt, "+json")
}

// textMedia tells media types whose bytes are text in UTF-8 (or in ASCII,
// its subset); text in another charset is kept as bytes.
func textMedia(mt string, params map[string]string) bool {
	cs, declared := params["charset"]
	if declared && !strings.EqualFold(cs, "utf-8") && !strings.EqualFold(cs, "us-ascii") {
		return false
	}
	return declared || strings.HasPrefix(mt, "text/") || mt == "application/xml" || strings.HasSuffix(mt, "+xml")
}

func base64JSON(b []byte) []byte {
	return jsonString(base64.StdEncoding.EncodeToString(b))
}

// jsonString is s as a JSON string, with <, > and & as they are.
func jsonString(s string) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a string always encodes
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}

// objectWriter writes a JSON object member by member.
type objectWriter struct{ b bytes.Buffer }

func newObjectWriter() *objectWriter {
	w := &objectWriter{}
	w.b.WriteByte('{')
	return w
}

func (w *objectWriter) str(name, value string) { w.raw(name, jsonString(value)) }

func (w *objectWriter) raw(name string, value []byte) {
	if w.b.Len() > 1 {
		w.b.WriteByte(',')
	}
	w.b.Write(jsonString(name))
	w.b.WriteByte(':')
	w.b.Write(value)
}

func (w *objectWriter) close() []byte {
	w.b.WriteByte('}')
	return w.b.Bytes()
}
