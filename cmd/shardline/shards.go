package main

import (
	"flag"
	"fmt"
	"io"

	"github.com/shardline/shardline/pkg/bucketing"
)

// shardsHelp is what "shardline shards -h" prints before the flags.
const shardsHelp = `usage: shardline shards -peak N [-kb K]

Prints the base-table shard count for a source writing N events per second of
K KB each: ceil(N x ceil(K) / (1000 x 0.7)), the seed articles' formula with
30% headroom under the 1,000 WCU/s partition ceiling. Set the result as
SHARDS_OVERRIDES (or shardline:shardOverrides) for that source; "shardline
advise" also sizes its GSI shards and checks both.

examples:
  shardline shards -peak 50000 -kb 1     prints 72
  shardline shards -peak 500             prints 1: the default of 4 is plenty

flags:
`

// shards prints the base-table shard count for a peak write rate.
func shards(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("shardline shards", flag.ContinueOnError)
	fs.SetOutput(stderr)
	peak := fs.Float64("peak", 0, "peak events per second of one source (required)")
	kb := fs.Float64("kb", 1, "average item size in KB")
	fs.Usage = func() {
		fmt.Fprint(stderr, shardsHelp)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *peak <= 0 {
		fs.Usage()
		return fmt.Errorf("-peak is required and must be positive")
	}
	fmt.Fprintf(stdout, "%d\n", bucketing.ShardsFor(*peak, *kb))
	return nil
}
