package benchrun

import (
	"testing"

	"github.com/shardline/shardline/testkit/testddb"
)

func TestMain(m *testing.M) { testddb.Main(m) }
