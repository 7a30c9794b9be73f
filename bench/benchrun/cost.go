package benchrun

import (
	"fmt"
	"math"
	"sort"
	"strings"
)

// Usage is what one million events use, by line item: the quantities the
// cost model measures (cost_run.go) and prices (Lines). Every field is per
// million events.
type Usage struct {
	// DynamoDB write request units, by what they write.
	EventWRU       float64 // the event items
	GSIWRU         float64 // their GSI copies
	HourMarkWRU    float64 // hour-index marks (shardmap.Hours)
	ShardRecordWRU float64 // shard records (shardmap.Registry)
	CatalogueWRU   float64 // catalogue entries (catalog.Record)
	DemandWRU      float64 // demand reports (shardmap.Demand)
	CounterWRU     float64 // the counters' writes: L0 links, L1 packs and L2 hour items (counts.Chain, counts.LSM)
	// BookkeepingRRU is the read request units of the pipeline's own
	// reads: shard records and hour indexes, the counter's reads.
	BookkeepingRRU float64
	// StreamRecords is the table stream's records the counter and the
	// archive read; Lambda's reads of a DynamoDB stream are free.
	StreamRecords float64
	// TableGBMonth is the event items and their GSI copies kept for the
	// table's retention, in GB-months.
	TableGBMonth float64

	KinesisShardHours         float64
	KinesisPutUnits           float64
	KinesisExtendedShardHours float64

	Functions []FunctionUsage

	S3Puts      float64 // archive objects
	S3GBMonth   float64 // archived bytes, for one month
	LogBytes    float64 // CloudWatch Logs ingestion, bytes
	FirehoseGiB float64 // Firehose ingestion after its 5 KB rounding (the Firehose anchor only)
}

// FunctionUsage is one Lambda function's invocations and billed time.
type FunctionUsage struct {
	Name     string  `json:"name"`
	MemoryMB int     `json:"memory_mb"`
	Requests float64 `json:"requests"`
	Seconds  float64 `json:"billed_seconds"`
}

// GBSeconds is the function's billed compute.
func (f FunctionUsage) GBSeconds() float64 { return f.Seconds * float64(f.MemoryMB) / 1024 }

// Bookkeeping is the write request units the pipeline spends on its own
// items, besides the events and their GSI copies.
func (u Usage) Bookkeeping() float64 {
	return u.HourMarkWRU + u.ShardRecordWRU + u.CatalogueWRU + u.DemandWRU + u.CounterWRU
}

// BookkeepingShare is Bookkeeping as a share of the event items' write
// units (the target: at most 2%).
func (u Usage) BookkeepingShare() float64 {
	if u.EventWRU == 0 {
		return 0
	}
	return u.Bookkeeping() / u.EventWRU
}

// Line is one priced line item.
type Line struct {
	Service     string  `json:"service"`
	Item        string  `json:"item"`
	Quantity    float64 `json:"quantity"`
	Unit        string  `json:"unit"`
	USD         float64 `json:"usd"`
	Bookkeeping bool    `json:"bookkeeping,omitempty"`
}

// Lines prices u at p, one line per item, in a fixed order; lines with no
// quantity are left out unless keepZero.
func (u Usage) Lines(p Prices, keepZero bool) []Line {
	wru := p.DynamoDBWriteUnitPerMillion / 1e6
	lines := []Line{
		{"DynamoDB", "event items", u.EventWRU, "WRU", u.EventWRU * wru, false},
		{"DynamoDB", "GSI copies", u.GSIWRU, "WRU", u.GSIWRU * wru, false},
		{"DynamoDB", "hour-index marks", u.HourMarkWRU, "WRU", u.HourMarkWRU * wru, true},
		{"DynamoDB", "shard records", u.ShardRecordWRU, "WRU", u.ShardRecordWRU * wru, true},
		{"DynamoDB", "catalogue entries", u.CatalogueWRU, "WRU", u.CatalogueWRU * wru, true},
		{"DynamoDB", "demand reports", u.DemandWRU, "WRU", u.DemandWRU * wru, true},
		{"DynamoDB", "counts levels (links, packs, hour items)", u.CounterWRU, "WRU", u.CounterWRU * wru, true},
		{"DynamoDB", "bookkeeping reads", u.BookkeepingRRU, "RRU", u.BookkeepingRRU * p.DynamoDBReadUnitPerMillion / 1e6, true},
		{"DynamoDB", "stream reads (counter, archive; free for Lambda)", u.StreamRecords, "records", 0, true},
		{"DynamoDB", "storage for the retention", u.TableGBMonth, "GB-month", u.TableGBMonth * p.DynamoDBStorageGBMonth, false},
		{"Kinesis", "shard-hours", u.KinesisShardHours, "shard-hours", u.KinesisShardHours * p.KinesisShardHour, false},
		{"Kinesis", "PUT payload units", u.KinesisPutUnits, "units", u.KinesisPutUnits * p.KinesisPutUnitPerMillion / 1e6, false},
		{"Kinesis", "extended retention", u.KinesisExtendedShardHours, "shard-hours", u.KinesisExtendedShardHours * p.KinesisExtendedShardHour, false},
	}
	for _, f := range u.Functions {
		lines = append(lines,
			Line{"Lambda", f.Name + " requests", f.Requests, "requests", f.Requests * p.LambdaRequestPerMillion / 1e6, false},
			Line{"Lambda", fmt.Sprintf("%s compute (%d MB arm64)", f.Name, f.MemoryMB), f.GBSeconds(), "GB-s", f.GBSeconds() * p.LambdaArmGBSecond, false})
	}
	lines = append(lines,
		Line{"Firehose", "ingestion (5 KB records)", u.FirehoseGiB, "GB", u.FirehoseGiB * p.FirehoseIngestGB, false},
		Line{"S3", "PUTs", u.S3Puts, "requests", u.S3Puts * p.S3PutPerThousand / 1000, false},
		Line{"S3", "storage, first month", u.S3GBMonth, "GB-month", u.S3GBMonth * p.S3StandardGBMonth, false},
		Line{"CloudWatch Logs", "ingestion", u.LogBytes / gib, "GB", u.LogBytes / gib * p.LogsIngestGB, false},
	)
	out := lines[:0]
	for _, l := range lines {
		// Firehose is an anchor's line: shardline's tables leave it out.
		if l.Quantity != 0 || (keepZero && l.Service != "Firehose") {
			out = append(out, l)
		}
	}
	return out
}

// Total sums the lines' dollars.
func Total(lines []Line) float64 {
	var t float64
	for _, l := range lines {
		t += l.USD
	}
	return t
}

// Top is the n most expensive lines, most expensive first.
func Top(lines []Line, n int) []Line {
	s := append([]Line(nil), lines...)
	sort.SliceStable(s, func(i, j int) bool { return s[i].USD > s[j].USD })
	return s[:min(n, len(s))]
}

// ByService sums the lines' dollars by service, in the lines' order.
func ByService(lines []Line) []Line {
	var out []Line
	at := map[string]int{}
	for _, l := range lines {
		i, ok := at[l.Service]
		if !ok {
			i = len(out)
			at[l.Service] = i
			out = append(out, Line{Service: l.Service})
		}
		out[i].USD += l.USD
	}
	return out
}

// usd formats dollars with enough digits to tell small lines apart.
func usd(x float64) string {
	switch {
	case x == 0:
		return "$0"
	case x >= 1:
		return fmt.Sprintf("$%.2f", x)
	case x >= 0.01:
		return fmt.Sprintf("$%.3f", x)
	default:
		return fmt.Sprintf("$%.5f", x)
	}
}

// qty formats a quantity compactly.
func qty(x float64) string {
	switch {
	case x == 0:
		return "0"
	case math.Abs(x) >= 100:
		return commas(int64(math.Round(x)))
	case math.Abs(x) >= 1:
		return fmt.Sprintf("%.2f", x)
	default:
		return fmt.Sprintf("%.4f", x)
	}
}

func commas(n int64) string {
	s := fmt.Sprint(n)
	if n < 0 {
		return "-" + commas(-n)
	}
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}
