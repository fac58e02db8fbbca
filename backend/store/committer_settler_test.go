package store

import (
	"errors"
	"fmt"
	"testing"
)

// recordingSettler is a submitter that keeps its state beside its request, as backend's
// submissions do.
type recordingSettler struct {
	name    string
	results chan<- string
}

func (s *recordingSettler) Settled(err error) { s.results <- fmt.Sprintf("%s:%v", s.name, err) }

// A request with a Settler is told its outcome there, success or failure, in submission order,
// and needs no Done.
func TestCommitterTellsTheSettler(t *testing.T) {
	errBad := errors.New("bad batch")
	c := NewCommitter(func(group []*Request) error {
		for _, req := range group {
			if req.Batch.Conversations[0].ID == "bad" {
				return errBad
			}
		}
		return nil
	}, CommitterOptions{})
	defer c.Close()
	results := make(chan string, 3)
	var chain Chain
	for _, name := range []string{"first", "bad", "after"} {
		req := &Request{Batch: &Batch{Conversations: []Conversation{{}}}, Chain: &chain}
		req.Batch.Conversations[0].ID = name
		req.Settler = &recordingSettler{name: name, results: results}
		if err := c.Submit(req); err != nil {
			t.Fatal(err)
		}
	}
	got := []string{<-results, <-results, <-results}
	if want := "[first:<nil> bad:bad batch after:bad batch]"; fmt.Sprint(got) != want {
		t.Fatalf("outcomes %v, want %s", got, want)
	}
}
