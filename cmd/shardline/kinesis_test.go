package main

import (
	"testing"

	"github.com/shardline/shardline/local/kinesislocal"
)

// TestLocalKinesisRegion: the region send signs for on a local Kinesis
// is kinesalite's.
func TestLocalKinesisRegion(t *testing.T) {
	if localKinesisRegion != kinesislocal.Region {
		t.Errorf("localKinesisRegion is %q, kinesalite's is %q", localKinesisRegion, kinesislocal.Region)
	}
}
