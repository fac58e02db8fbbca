package main

import (
	"os"

	"github.com/harness-edge/harness-edge/internal/nemesis/check"
)

// runCheck is `harness-nemesis check [flags] FILE`: the checker alone on a
// recorded history, so any history can be checked again (and the checker
// itself tested, internal/nemesis/check). It exits 0 when the history broke
// no promise, 1 with each violation named, 2 on bad arguments or an
// unreadable history.
func runCheck(args []string) int {
	return check.Main(args, os.Stdout, os.Stderr)
}
