// Reading send's input: NDJSON, JSON arrays and pretty-printed events, named by file:line.

package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"time"

	"github.com/shardline/shardline/pkg/producer"
)

// inputEvent is an event read, stamped, with where it came from.
type inputEvent struct {
	id   string
	data []byte
	at   string // file:line
}

// readInputs reads each file in turn (stdin for "-") and hands add each
// event. A syntax error or a value that is not an event stops it, named by
// file:line; an event producer.Stamp refuses is counted rejected.
func readInputs(ctx context.Context, files []string, add func(inputEvent) error, t *tally) error {
	for _, name := range files {
		var r io.Reader
		display := name
		if name == "-" {
			r, display = stdin, "stdin"
		} else {
			fh, err := os.Open(name)
			if err != nil {
				return fmt.Errorf("open input: %w", err)
			}
			defer fh.Close()
			r = fh
		}
		if err := readInput(ctx, display, r, add, t); err != nil {
			return err
		}
	}
	return nil
}

// readInput reads one input: a stream of JSON values, each an event or an
// array of events. A first value that is an array is read element by
// element, so a large JSON array file is never held whole.
func readInput(ctx context.Context, name string, r io.Reader, add func(inputEvent) error, t *tally) error {
	lr := &lineReader{r: r}
	br := bufio.NewReaderSize(lr, 64<<10)
	dec := json.NewDecoder(br)
	where := func(off int64) string { return fmt.Sprintf("%s:%d", name, lr.line(off)) }
	// fail names the line where the bad value begins: the decoder may
	// find the fault only on a later line (a value cut short runs into the
	// next line's), which is then said too.
	fail := func(err error, last int64) error {
		start := lr.start(last)
		var syn *json.SyntaxError
		var typ *json.UnmarshalTypeError
		switch {
		case errors.As(err, &syn):
			if found := lr.line(max(syn.Offset-1, start)); found != lr.line(start) {
				return fmt.Errorf("%s: not JSON: %w (found on line %d; is the value that begins here cut short?)", where(start), err, found)
			}
			return fmt.Errorf("%s: not JSON: %w", where(start), err)
		case errors.As(err, &typ):
			return fmt.Errorf("%s: %w", where(typ.Offset), err)
		case errors.Is(err, io.ErrUnexpectedEOF):
			return fmt.Errorf("%s: the input ends inside the JSON value that begins here", where(start))
		}
		return fmt.Errorf("%s: read: %w", where(last), err)
	}
	emit := func(raw json.RawMessage, at string) error {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if len(raw) == 0 || raw[0] != '{' {
			return fmt.Errorf("%s: %s, not an event (a JSON object) or an array of events", at, kindOf(raw))
		}
		t.read.Add(1)
		id, data, err := producer.Stamp(raw, time.Now())
		if err != nil {
			t.reject(at, id, err.Error())
			return nil
		}
		return add(inputEvent{id: id, data: data, at: at})
	}
	if first, err := peekNonSpace(br); err == nil && first == '[' {
		if _, err := dec.Token(); err != nil {
			return fail(err, 0)
		}
		for i := 0; dec.More(); i++ {
			var raw json.RawMessage
			before := dec.InputOffset()
			if err := dec.Decode(&raw); err != nil {
				return fail(err, before)
			}
			end := dec.InputOffset()
			if err := emit(raw, where(end-int64(len(raw)))); err != nil {
				return err
			}
			lr.forget(end)
		}
		if _, err := dec.Token(); err != nil {
			return fail(err, dec.InputOffset())
		}
	}
	for {
		var raw json.RawMessage
		before := dec.InputOffset()
		err := dec.Decode(&raw)
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fail(err, before)
		}
		end := dec.InputOffset()
		at := where(end - int64(len(raw)))
		if raw[0] == '[' {
			var elems []json.RawMessage
			if err := json.Unmarshal(raw, &elems); err != nil {
				return fmt.Errorf("%s: %w", at, err)
			}
			for i, e := range elems {
				if err := emit(e, fmt.Sprintf("%s[%d]", at, i)); err != nil {
					return err
				}
			}
		} else if err := emit(raw, at); err != nil {
			return err
		}
		lr.forget(end)
	}
}

func kindOf(raw json.RawMessage) string {
	if len(raw) == 0 {
		return "nothing"
	}
	switch raw[0] {
	case '[':
		return "an array inside an array"
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	}
	return "a number"
}

// peekNonSpace is the first byte of br that is not JSON whitespace, left
// unread; 0 when the buffer holds nothing else.
func peekNonSpace(br *bufio.Reader) (byte, error) {
	for i := 1; i <= br.Size(); i++ {
		b, err := br.Peek(i)
		if err != nil {
			return 0, err
		}
		switch c := b[i-1]; c {
		case ' ', '\t', '\r', '\n':
		default:
			return c, nil
		}
	}
	return 0, nil
}

// lineReader counts the lines of what is read through it, keeping the
// offsets of the newlines, and the bytes, not yet forgotten.
type lineReader struct {
	r       io.Reader
	read    int64   // bytes read
	nl      []int64 // offsets of the newlines since the last forget
	dropped int     // newlines forgotten
	kept    []byte  // the bytes read since the last forget, from offset keptAt
	keptAt  int64
}

func (l *lineReader) Read(p []byte) (int, error) {
	n, err := l.r.Read(p)
	for i, c := range p[:n] {
		if c == '\n' {
			l.nl = append(l.nl, l.read+int64(i))
		}
	}
	l.kept = append(l.kept, p[:n]...)
	l.read += int64(n)
	return n, err
}

// start is the offset of the first byte from off on that is not JSON
// whitespace: where the value read from off begins. off when there is
// none.
func (l *lineReader) start(off int64) int64 {
	for i := max(off-l.keptAt, 0); i < int64(len(l.kept)); i++ {
		switch l.kept[i] {
		case ' ', '\t', '\r', '\n':
		default:
			return l.keptAt + i
		}
	}
	return off
}

// line is the line (from 1) of the byte at offset off.
func (l *lineReader) line(off int64) int {
	return l.dropped + sort.Search(len(l.nl), func(i int) bool { return l.nl[i] >= off }) + 1
}

// forget drops the newlines and bytes before off: no line is asked of
// them again. The bytes are resliced, not copied: what is kept is at most
// the reader's look-ahead and the value under way.
func (l *lineReader) forget(off int64) {
	i := sort.Search(len(l.nl), func(i int) bool { return l.nl[i] >= off })
	l.dropped += i
	l.nl = l.nl[i:]
	if k := off - l.keptAt; k > 0 { // off is never past what was read
		l.kept = l.kept[k:]
		l.keptAt = off
	}
}
