package running_test

import (
	"context"
	"testing"

	"github.com/harness-edge/harness-edge/backend/providers/internal/running"
)

// An execution runs once at a time; its entry is known once started (the first value counts);
// a run that ends normally is forgotten, one whose context was cancelled stays for Take.
func TestTable(t *testing.T) {
	var table running.Table[string]
	e, ok := table.Register("x")
	if !ok {
		t.Fatal("first Register refused")
	}
	if _, again := table.Register("x"); again {
		t.Fatal("a second Register of a running execution accepted")
	}
	select {
	case <-e.Known():
		t.Fatal("known before Started")
	default:
	}
	e.Started("task-1")
	e.Started("task-2")
	<-e.Known()
	if e.Value() != "task-1" {
		t.Fatalf("value %q, want the first Started", e.Value())
	}

	table.Unregister(context.Background(), "x", e)
	if table.Take("x") != nil {
		t.Fatal("a run that ended normally is still in the table")
	}

	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	e2, _ := table.Register("y")
	table.Unregister(cancelled, "y", e2) // never started: marked with nothing
	<-e2.Known()
	if got := table.Take("y"); got != e2 || got.Value() != "" {
		t.Fatalf("Take after a cancelled run = %v (%q), want its entry, started with nothing", got, got.Value())
	}
	if table.Take("y") != nil {
		t.Fatal("Take twice returned the entry twice")
	}
}
