// Command infra is shardline's CDK app. The stack lands with issue 4; until
// then `cdk synth` stops here with a message instead of deploying half a
// pipeline.
package main

import (
	"fmt"
	"os"
)

func main() {
	fmt.Fprintln(os.Stderr, "shardline: the CDK stack is not implemented yet (issue 4); nothing to synthesize")
	os.Exit(1)
}
