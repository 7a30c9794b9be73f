package benchrun

import (
	"testing"

	"github.com/shardline/shardline/internal/testdb"
)

func TestMain(m *testing.M) { testdb.Main(m) }
