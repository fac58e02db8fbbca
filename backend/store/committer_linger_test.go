package store

import (
	"strconv"
	"strings"
	"testing"
	"time"
)

// With a linger, a group commit that follows a group of several requests (writers are
// concurrent) waits for more from its first request's arrival, up to the linger, and is cut
// short by a full queue or by Close; a lone writer (no history yet, or a run of groups of one
// request each) never waits for it. The linger here is far longer than the test's timeout: a commit that waited
// for it would hang the test, so each grouping below can only come from the rule, not from a
// race with a timer.
func TestCommitterLingerGathersConcurrentWritersButNotALoneOne(t *testing.T) {
	groups := make(chan string, 16)
	hold, holding := make(chan struct{}), make(chan struct{})
	c := NewCommitter(func(group []*Request) error {
		var ids []string
		for _, req := range group {
			ids = append(ids, req.Batch.Conversations[0].ID)
		}
		if ids[0] == "r2" {
			close(holding)
			<-hold // r3 and r4 queue meanwhile
		}
		groups <- strings.Join(ids, ",")
		return nil
	}, CommitterOptions{MaxQueued: 3, Linger: time.Hour})
	submit := func(id string) chan error {
		done := make(chan error, 1)
		b := &Batch{Conversations: []Conversation{{}}}
		b.Conversations[0].ID = id
		if err := c.Submit(&Request{Batch: b, Done: func(err error) { done <- err }}); err != nil {
			t.Fatal(err)
		}
		return done
	}
	next := func(want string) {
		t.Helper()
		select {
		case got := <-groups:
			if got != want {
				t.Fatalf("group %q, want %q", got, want)
			}
		case <-time.After(20 * time.Second):
			t.Fatalf("no group committed; want %q (a commit waited for the linger)", want)
		}
	}

	<-submit("r1")
	next("r1") // a lone writer: no linger
	r2 := submit("r2")
	<-holding
	submit("r3")
	submit("r4")
	close(hold)
	<-r2
	next("r2")
	next("r3,r4") // queued during r2's commit, the writer still alone: taken at once

	// The last group held two: the next one lingers until the queue is full (MaxQueued 3).
	submit("r5")
	submit("r6")
	select {
	case got := <-groups:
		t.Fatalf("group %q committed before the linger or a full queue", got)
	case <-time.After(50 * time.Millisecond): // not a threshold: only gives a wrong commit time to show
	}
	submit("r7")
	next("r5,r6,r7")

	// Close cuts a linger short: what is queued is committed, and Close returns.
	submit("r8")
	submit("r9")
	closed := make(chan struct{})
	go func() { c.Close(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(20 * time.Second):
		t.Fatal("Close waited for the linger")
	}
	next("r8,r9")
	if n := len(groups); n != 0 {
		t.Fatalf("%d more groups than expected", n)
	}
}

// A group of one request amid concurrent writers (a linger that gathered nothing else, or a
// request that filled the queue alone) does not make the next group skip the linger: the rule
// looks at more than the last group, so one lone group cannot start a run of commits of one
// event each. Only a run of loneGroupsBeforeNoLinger groups of one request each means a lone
// writer, which then never waits. As above, the linger is far longer than the test's timeout.
func TestCommitterLingerSurvivesASingleGroupAmidConcurrentWriters(t *testing.T) {
	groups := make(chan string, 16)
	hold, holding := make(chan struct{}), make(chan struct{})
	c := NewCommitter(func(group []*Request) error {
		var ids []string
		for _, req := range group {
			ids = append(ids, req.Batch.Conversations[0].ID)
		}
		if ids[0] == "r1" {
			close(holding)
			<-hold // r2 and r3 queue meanwhile
		}
		groups <- strings.Join(ids, ",")
		return nil
	}, CommitterOptions{MaxQueued: 3, MaxQueuedBytes: 1000, Linger: time.Hour})
	defer c.Close()
	submit := func(id string, conversations int) {
		b := &Batch{Conversations: make([]Conversation, conversations)} // 256 bytes each (Batch.Size)
		b.Conversations[0].ID = id
		if err := c.Submit(&Request{Batch: b, Done: func(error) {}}); err != nil {
			t.Fatal(err)
		}
	}
	next := func(want string) {
		t.Helper()
		select {
		case got := <-groups:
			if got != want {
				t.Fatalf("group %q, want %q", got, want)
			}
		case <-time.After(20 * time.Second):
			t.Fatalf("no group committed; want %q (a commit waited for the linger)", want)
		}
	}
	quiet := func(why string) {
		t.Helper()
		select {
		case got := <-groups:
			t.Fatalf("group %q committed before the linger or a full queue (%s)", got, why)
		case <-time.After(50 * time.Millisecond): // not a threshold: only gives a wrong commit time to show
		}
	}

	submit("r1", 1) // no history yet: a lone writer, committed at once
	<-holding
	submit("r2", 1)
	submit("r3", 1)
	close(hold)
	next("r1")
	next("r2,r3") // writers are concurrent from here

	submit("big1", 4) // 1,024 bytes: the queue is full with it alone, a group of one
	next("big1")
	submit("r4", 1)
	quiet("a single group amid concurrent writers ended the linger")
	submit("r5", 1)
	submit("r6", 1)
	next("r4,r5,r6")

	// A run of groups of one: a lone writer, which stops waiting once the run is long enough.
	for i := range loneGroupsBeforeNoLinger {
		id := "big" + strconv.Itoa(i+2)
		submit(id, 4)
		next(id)
	}
	submit("r7", 1)
	next("r7")
}
