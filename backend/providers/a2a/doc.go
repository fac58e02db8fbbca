// Package a2a is the provider that serves a remote agent speaking A2A (Agent2Agent, protocol
// 1.0 or 0.3, whichever its card offers, 1.0 first) behind the edge, through the official Go SDK
// (github.com/a2aproject/a2a-go/v2: its 1.0 client, and its a2acompat/a2av0 client for 0.3, both
// on the SDK's 1.0 types, so that everything past the card (card.go) is written once).
//
// One execution is one A2A task; a conversation keeps one A2A contextId. The agent's stream is
// relayed event by event into the edge's durable log, with a checkpoint (task id and how much of
// the task's history and artifacts has been relayed) committed with each event, so that a cut
// agent stream (SubscribeToTask plus GetTask; 0.3's tasks/resubscribe and tasks/get) or an edge
// restart (backend.Resumer) relays every event once and in order. See docs/a2a.md.
package a2a
