package benchrun

import (
	"fmt"
	"strings"
)

// markdown renders the counts section of results.md.
func (r *CountsReport) markdown(b *strings.Builder) {
	b.WriteString("\n## Counts: what exact counts cost (issue 10)\n\nThese figures measure the previous release's per-source counter (`sourcecounter.Counter`, one update per source per batch), which redrive still runs for batches given up on before the switch-over. The counters deployed now are levels (a chain link per stream shard, packs per bucket every 20 s, an hour item per source): their write units are in `cost.md` (\"counts levels\"), their read of a day's chart in docs/counts.md. These benches have not been rewritten for them.\n\n| target | limit | measured | met |\n|---|---|---|---|\n")
	for _, t := range r.Targets {
		met := "yes"
		if !t.Met {
			met = "**no**"
		}
		fmt.Fprintf(b, "| %s | %s | %s | %s |\n", t.Target, t.Limit, t.Measured, met)
	}
	r.writeSection(b)
	r.chartSection(b)
	r.heatSection(b)
}

func (r *CountsReport) writeSection(b *strings.Builder) {
	fmt.Fprintf(b, "\n### Counting: the counter's writes per event\n\n"+
		"A busy source, %d events/s of %d types (uniformly random), over one hour. Its last %d minutes are written by the real ingest handler "+
		"into DynamoDB Local (one Kinesis invocation per second of events), read back from the table's stream and filtered as the mapping's filter does "+
		"(inserted events only). DynamoDB Local gives a table's stream %d shard; on AWS a stream has a shard per table partition, and the "+
		"source's 4 write shards (4 partition keys) may lie on up to 4, so the records are also split by their write shard into 4 stream shards. "+
		"The earlier minutes of the hour are simulated stream records of the same source and rate, so that the counter items are as large as they are in a busy hour. "+
		"Every shard's records are cut into the invocations the stack's mapping makes of them: a batch closes 10 s after its first record "+
		"(the batching window), at the end of each 15 s tumbling window, at 10,000 records or at 6 MB; the time of a record is its event's `time` "+
		"(the bench writes minutes of events in seconds, so the stream's own timestamps do not show the rate). "+
		"The real counter (`sourcecounter.Counter.Apply`) applies the invocations in time order. "+
		"WCU are priced from the counter item's size read before and after each update, as DynamoDB bills an `UpdateItem`: "+
		"ceil(max(before, after) / 1 KB); DynamoDB Local's own `ConsumedCapacity` is shown beside them. "+
		"Every run checks that the hour's count equals the events sent. The target's line takes the higher of the two pricings.\n\n",
		r.Rate, r.Types, r.MeasuredMins, r.LocalShards)
	b.WriteString("| stream shards | part of the hour | events | invocations | `UpdateItem` | WCU (priced) | WCU (DynamoDB Local) | updates/event | WCU/event |\n|---:|---|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, w := range r.Write {
		fmt.Fprintf(b, "| %d | %s | %d | %d | %d | %d | %.0f | %.5f | %.4f |\n",
			w.StreamShards, w.Part, w.Events, w.Invocations, w.Updates, w.WCU, w.ReportedWCU, w.UpdatesPerEvent, w.WCUPerEvent)
	}
}

func (r *CountsReport) chartSection(b *strings.Builder) {
	fmt.Fprintf(b, "\n### Charts: `GET /v1/counts` through the real query handler\n\n"+
		"%d days of the busy source's counter items, written by the real counter from simulated stream records (4 stream shards, 10,000 records an invocation): "+
		"the last 24.5 hours at %d events/s (random types), the %d days before at one event a minute of each type, so that every ten minutes' item exists and holds every minute of every type "+
		"(the worst case for the number of items; their counts are smaller, hence a byte or so shorter each, than at %[2]d events/s). \"Now\" is mid-hour, so a day's chart reads the ten-minute items of 24.5 hours. "+
		"`requests` and `RCU (DynamoDB Local)` are the answer's `plan`; `RCU (priced)` sums the item sizes of the same pages, rounds each up to 4 KB and halves it (eventually consistent reads). "+
		"Every run checks the charts' totals against the events sent.\n\n",
		r.Days, r.Rate, r.Days-1)
	b.WriteString("| chart | series × buckets | events | counter items | KB read | requests | RCU (DynamoDB Local) | RCU (priced) | latency (ms) |\n|---|---|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, c := range r.Charts {
		fmt.Fprintf(b, "| %s | %d × %d | %d | %d | %.0f | %d | %.1f | %.1f | %.1f |\n",
			c.Chart, c.Series, c.Buckets, c.Events, c.Items, float64(c.ItemBytes)/1024, c.Requests, c.RCU, c.PricedRCU, c.LatencyMs)
	}
	if len(r.Charts) == 2 {
		fmt.Fprintf(b, "\nA Query page holds 1 MB: had every hour of the %d days run at %d events/s (items of %.1f KB, the day's largest), the month's chart would take %d requests.\n",
			r.Days, r.Rate, float64(r.Charts[0].MaxItem)/1024, r.MonthAtRate)
	}
}

func (r *CountsReport) heatSection(b *strings.Builder) {
	h := r.Heat
	fmt.Fprintf(b, "\n### Heat: a source at %d events/s\n\n"+
		"All of a source's counter items share one partition key, `C#<source>`; only the current item (ten minutes) takes updates. "+
		"Measured: an item of a busy hour, built by the real counter from %d stream shards each counting every minute of every type, "+
		"holds %d counters, %d types and %d watermarks: %d bytes. At %d events/s a minute's count of a type has 6 significant digits "+
		"(%d bytes, not the simulation's %d), which makes it %d bytes (a watermark is %d bytes).\n\n"+
		"Model: a stream shard's records reach the counter in invocations that close at the 10 s batching window, at each 15 s tumbling window's end, "+
		"or when full: %d records (10,000, or 6 MB of %d-byte records, as measured above). A shard carrying r records/s is invoked at most "+
		"1/10 + 1/15 + r/%d times a second, and each invocation updates the current item once (its records span at most two minutes, "+
		"far under the 200 counters one update carries), and the next item too when it straddles an item's end (15 s in 600: 2.5 %% more updates). "+
		"Each update is billed at the item's full size, the largest at its ten minutes' end.\n\n",
		h.Rate, h.SimulatedShards, h.Counters, r.Types, h.SimulatedShards, h.ItemBytes, h.Rate, h.CountBytesAtRate, h.CountBytes, h.ItemBytesAtRate, h.WatermarkBytes,
		h.BatchLimit, h.RecordBytes, h.BatchLimit)
	b.WriteString("| why this many | stream shards carrying the source | records/s a shard | invocations/s a shard | updates/s on the item | item bytes | WCU an update | WCU/s on `C#<source>` |\n|---|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, x := range h.Rows {
		fmt.Fprintf(b, "| %s | %d | %.0f | %.3f | %.1f | %d | %d | %.0f |\n",
			x.Basis, x.StreamShards, x.RecordsPerShard, x.InvocationsPerShard, x.UpdatesPerSecond, x.ItemBytes, x.WCUPerUpdate, x.WCUPerSecond)
	}
	fmt.Fprintf(b, "\nThe partition limit, 1,000 WCU/s, would take %d stream shards carrying this one source. "+
		"The figures are bounds: an invocation closed by size also restarts the batching window, and they bill every update at the item's size at its end; "+
		"averaged over its ten minutes the item's counters are about half as large. Before ten-minute items (one item an hour), the item at the hour's end "+
		"was about six times the counters: 269 WCU/s at 72 stream shards, 481 at 144.\n", h.BreakEvenShards)
}
