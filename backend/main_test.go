package backend_test

import (
	"os"
	"testing"
)

func TestMain(m *testing.M) {
	if dir := os.Getenv(crashChildEnv); dir != "" {
		runCrashChild(dir) // never returns; the parent test kills it
	}
	if dir := os.Getenv(openChildEnv); dir != "" {
		runOpenChild(dir) // never returns
	}
	os.Exit(m.Run())
}
