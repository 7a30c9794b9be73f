package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/shardline/shardline/internal/archive"
)

// archiveHelp is what "shardline archive -h" prints before the flags.
const archiveHelp = `usage: shardline archive query -source S -from DAY [-to DAY] [-database NAME] [-counts] [-v1]

query prints the Athena query of a source's archived events over a range of
UTC days (from -from to -to, both included), each event once: the line with
the largest seq of each (source, id, time), as docs/archive.md explains.
It computes the source's bucket, crc32(to_utf8(source)) % 32, so that the
query names it and Athena reads one partition a day: that bucket's objects
(events/v2/bucket=<NN>/day=<DAY>/ in the ArchiveBucket), shared with the
other sources of the bucket, which the source filter leaves out.

-counts prints the events per day and type instead. -v1 also reads the
table events_v1, where the archive kept each source's days before the
layout by bucket (docs/archive.md, Migration): for days archived before the
upgrade, or a range across it. The query goes to stdout, to paste into the
Athena console or to pass to "aws athena start-query-execution
--query-string"; it reads nothing and needs no credentials.

examples:
  shardline archive query -source orders -from 2026-10-01 -to 2026-10-31
  shardline archive query -source 'auth #1 (eu/west)' -from 2026-11-22 -counts
  shardline archive query -source orders -from 2026-01-01 -to 2026-12-31 -v1 -database "$(out ArchiveDatabase)"

flags:
`

// archiveCmd runs "shardline archive query".
func archiveCmd(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		newArchiveFlags(stderr).fs.Usage()
		return errors.New("archive needs a subcommand: query")
	}
	switch args[0] {
	case "-h", "-help", "--help", "help":
		newArchiveFlags(stderr).fs.Usage()
		return flag.ErrHelp
	case "query":
		return archiveQuery(args[1:], stdout, stderr)
	}
	return fmt.Errorf("archive %s: no such subcommand; use query (shardline archive -h)", args[0])
}

// archiveFlags are archive query's flags.
type archiveFlags struct {
	fs                   *flag.FlagSet
	source, from, to, db string
	counts, v1           bool
}

func newArchiveFlags(stderr io.Writer) *archiveFlags {
	a := &archiveFlags{fs: flag.NewFlagSet("shardline archive query", flag.ContinueOnError)}
	fs := a.fs
	fs.SetOutput(stderr)
	fs.StringVar(&a.source, "source", "", "the source, as its events carry it (required; any characters)")
	fs.StringVar(&a.from, "from", "", "first UTC day, such as 2026-10-01 (required)")
	fs.StringVar(&a.to, "to", "", "last UTC day, included (default -from)")
	fs.StringVar(&a.db, "database", "shardline_archive", "the Glue database: the stack's output ArchiveDatabase (<stack>_archive)")
	fs.BoolVar(&a.counts, "counts", false, "count the events per day and type instead of listing them")
	fs.BoolVar(&a.v1, "v1", false, "also read events_v1, the layout by source that the archive wrote before")
	fs.Usage = func() {
		fmt.Fprint(stderr, archiveHelp)
		fs.PrintDefaults()
	}
	return a
}

// parse reads and checks the flags; every error names its flag.
func (a *archiveFlags) parse(args []string) error {
	if err := a.fs.Parse(args); err != nil {
		return err
	}
	if a.fs.NArg() > 0 {
		return fmt.Errorf("archive query takes no arguments, got %q; flags go before anything else", a.fs.Args())
	}
	if a.source == "" {
		return errors.New("-source is required: the source whose events to read, such as orders")
	}
	if a.from == "" {
		return errors.New("-from is required: the first UTC day, such as 2026-10-01")
	}
	if a.to == "" {
		a.to = a.from
	}
	from, err := time.Parse(archive.DayLayout, a.from)
	if err != nil {
		return fmt.Errorf("-from %q: want a UTC day such as 2026-10-01", a.from)
	}
	to, err := time.Parse(archive.DayLayout, a.to)
	if err != nil {
		return fmt.Errorf("-to %q: want a UTC day such as 2026-10-31", a.to)
	}
	if to.Before(from) {
		return fmt.Errorf("-to %s is before -from %s", a.to, a.from)
	}
	if !glueIdentifier(a.db) {
		return fmt.Errorf("-database %q: a Glue database name is letters, digits and underscores", a.db)
	}
	return nil
}

// archiveQuery prints the Athena query of a source's days.
func archiveQuery(args []string, stdout, stderr io.Writer) error {
	a := newArchiveFlags(stderr)
	if err := a.parse(args); err != nil {
		return err
	}
	_, err := io.WriteString(stdout, archiveSQL(a))
	return err
}

// archiveSQL is the query the flags ask for: a header of comments that says
// what it reads, then the statement.
func archiveSQL(a *archiveFlags) string {
	bucket := archive.Bucket(a.source)
	days := "day = " + sqlString(a.from)
	span := "on " + a.from
	if a.to != a.from {
		days = "day BETWEEN " + sqlString(a.from) + " AND " + sqlString(a.to)
		span = "from " + a.from + " to " + a.to
	}
	var b strings.Builder
	what := "the events"
	if a.counts {
		what = "the events per day and type"
	}
	fmt.Fprintf(&b, "-- %s of source %s %s (UTC), each event once.\n", what, strconv.Quote(a.source), span)
	fmt.Fprintf(&b, "-- Its bucket is %d (crc32(to_utf8(source)) %% %d): Athena reads %sbucket=%s/day=<day>/ of the archive bucket.\n",
		bucket, archive.Buckets, archive.LayoutPrefix, archive.BucketPartition(bucket))
	v2 := fmt.Sprintf("%s.%s\n  WHERE bucket = %d AND %s AND source = %s", a.db, archive.Table, bucket, days, sqlString(a.source))
	from := v2
	if a.v1 {
		fmt.Fprintf(&b, "-- With events_v1, the layout before: %ssrc=%s/day=<day>/.\n", archive.Prefix, archive.SourcePartition(a.source))
		const cols = `source, id, "time", type, subject, seq, event, day`
		from = "(\n" +
			"    SELECT " + cols + " FROM " + strings.ReplaceAll(v2, "\n  WHERE", " WHERE") + "\n" +
			"    UNION ALL\n" +
			"    SELECT " + cols + " FROM " + a.db + "." + archive.V1Table + " WHERE src = " + sqlString(archive.SourcePartition(a.source)) + " AND " + days + " AND source = " + sqlString(a.source) + "\n" +
			"  )"
	}
	if a.counts {
		fmt.Fprintf(&b, "SELECT day, type, count(*) AS events\nFROM (\n%s\n  FROM %s\n)\nWHERE n = 1\nGROUP BY day, type\nORDER BY day, type;\n",
			newest("  SELECT day, type, "), from)
		return b.String()
	}
	fmt.Fprintf(&b, "SELECT \"time\", id, type, subject, json_extract(event, '$.data') AS data\nFROM (\n%s\n  FROM %s\n)\nWHERE n = 1\nORDER BY \"time\", id;\n",
		newest("  SELECT *, "), from)
	return b.String()
}

// newest is a select list, begun by selected, that numbers each event's
// lines newest first (n = 1: the largest seq), the ORDER BY aligned under
// the PARTITION BY.
func newest(selected string) string {
	over := selected + "row_number() OVER ("
	return over + "PARTITION BY source, id, \"time\"\n" + strings.Repeat(" ", len(over)) + "ORDER BY cast(seq AS decimal(38, 0)) DESC) AS n"
}

// sqlString is s as an Athena (Trino) string literal: in single quotes,
// each one doubled.
func sqlString(s string) string {
	return "'" + strings.ReplaceAll(s, "'", "''") + "'"
}

// glueIdentifier says whether s can name a Glue database without quoting.
func glueIdentifier(s string) bool {
	if s == "" || len(s) > 255 {
		return false
	}
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}
