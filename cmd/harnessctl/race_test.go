//go:build race

package main

// raceEnabled reports that the tests run under the race detector, so the harnessctl binary they
// build is instrumented too.
const raceEnabled = true
