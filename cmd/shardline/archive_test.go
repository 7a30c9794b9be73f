package main

import (
	"os"
	"strings"
	"testing"
)

// TestArchiveQuery: "shardline archive query" prints the Athena query of a
// source's days with the source's bucket computed (orders is in bucket 14:
// crc32("orders") % 32, pinned here as in internal/archive), the day range
// and the source filter, quoting the source as a SQL literal; -counts
// counts per day and type; -v1 reads the layout before too, by its src.
func TestArchiveQuery(t *testing.T) {
	code, out, errs := sh("archive", "query", "-source", "orders", "-from", "2026-10-01", "-to", "2026-10-31")
	if code != 0 {
		t.Fatalf("code %d: %s", code, errs)
	}
	for _, want := range []string{
		"-- Its bucket is 14 (crc32(to_utf8(source)) % 32): Athena reads events/v2/bucket=14/day=<day>/",
		"  FROM shardline_archive.events\n  WHERE bucket = 14 AND day BETWEEN '2026-10-01' AND '2026-10-31' AND source = 'orders'\n)\nWHERE n = 1\n",
		`ORDER BY cast(seq AS decimal(38, 0)) DESC) AS n`,
		`json_extract(event, '$.data') AS data`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("query lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "events_v1") || strings.Contains(out, "GROUP BY") {
		t.Errorf("a plain query reads events_v1 or counts:\n%s", out)
	}

	_, out, _ = sh("archive", "query", "-source", "o'brien (eu/west)", "-from", "2026-11-22", "-counts", "-v1", "-database", "s_archive")
	for _, want := range []string{
		"FROM s_archive.events WHERE bucket = 6 AND day = '2026-11-22' AND source = 'o''brien (eu/west)'",
		"UNION ALL",
		"FROM s_archive.events_v1 WHERE src = '.6f27627269656e202865752f7765737429' AND day = '2026-11-22' AND source = 'o''brien (eu/west)'",
		"GROUP BY day, type",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("-counts -v1 query lacks %q:\n%s", want, out)
		}
	}

	for _, c := range []struct {
		args []string
		err  string
	}{
		{[]string{"archive", "query", "-from", "2026-10-01"}, "-source is required"},
		{[]string{"archive", "query", "-source", "orders"}, "-from is required"},
		{[]string{"archive", "query", "-source", "orders", "-from", "2026-10-01T00:00:00Z"}, `-from "2026-10-01T00:00:00Z": want a UTC day`},
		{[]string{"archive", "query", "-source", "orders", "-from", "2026-10-31", "-to", "2026-10-01"}, "-to 2026-10-01 is before -from 2026-10-31"},
		{[]string{"archive", "query", "-source", "orders", "-from", "2026-10-01", "-database", "x; DROP"}, `-database "x; DROP"`},
		{[]string{"archive", "bogus"}, "no such subcommand"},
		{[]string{"archive"}, "needs a subcommand: query"},
	} {
		code, out, errs := sh(c.args...)
		if code != 1 || out != "" || !strings.Contains(errs, c.err) {
			t.Errorf("shardline %q: code %d, out %q, err %q; want %q", c.args, code, out, errs, c.err)
		}
	}
}

// TestArchiveDocShowsTheQuery: docs/archive.md shows exactly what
// "shardline archive query" prints for its example, so that the doc's
// query and bucket cannot drift from the code's.
func TestArchiveDocShowsTheQuery(t *testing.T) {
	doc, err := os.ReadFile("../../docs/archive.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"archive", "query", "-source", "orders", "-from", "2026-10-01", "-to", "2026-10-31"},
		{"archive", "query", "-source", "orders", "-from", "2026-10-01", "-to", "2026-10-31", "-counts"},
	} {
		_, out, errs := sh(args...)
		if out == "" || !strings.Contains(string(doc), out) {
			t.Errorf("docs/archive.md does not show what shardline %s prints (%s):\n%s", strings.Join(args, " "), errs, out)
		}
	}
}
