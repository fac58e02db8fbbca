//go:build race

package main

// raceEnabled reports that the test binary runs under the race detector, so the caddy binary it
// builds is instrumented too.
const raceEnabled = true
