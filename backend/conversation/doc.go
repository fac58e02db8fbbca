// Package conversation is what a conversation is beyond a group of executions: for now its busy
// policy (docs/protocol.md, "Busy conversations") — what a start means while another execution
// of the conversation has not ended — and the wait of an execution for its turn. The runtime
// (package backend) asks it what a start must do (Effective, Plan) and hands it the waiting
// (AwaitTurn) through the small Executions interface, which the runtime implements with the
// handles every operation uses; nothing here knows where an execution runs.
//
// What must hold across nodes — that a `reject` start sees every execution that is not terminal,
// that turns queue in arrival order — is not decided here: it is a precondition the store checks
// in the commit that creates the execution (store.Turn), as it checks idempotency keys. This
// package decides what to ask of the store and what to do with its answer.
package conversation
