// Follows one execution's event stream with npm's eventsource, as a Node program would, and
// prints what happened as one JSON line: the sequences received, the HTTP status of every
// request the client made, and whether the client ended up CLOSED (it stopped reconnecting).
// Usage: node client.mjs <events URL>
import { EventSource } from 'eventsource'

const url = process.argv[2]
const statuses = []
const sequences = []
const countingFetch = async (input, init) => {
  const response = await fetch(input, init)
  statuses.push(response.status)
  return response
}
const source = new EventSource(url, { fetch: countingFetch })
const report = (closed) => {
  console.log(JSON.stringify({ closed, sequences, statuses }))
  source.close()
  process.exit(closed ? 0 : 1)
}
for (const type of ['run.queued', 'run.started', 'output.text.delta', 'output.text.done', 'run.completed']) {
  source.addEventListener(type, (event) => sequences.push(Number(event.lastEventId)))
}
source.onerror = () => {
  if (source.readyState === EventSource.CLOSED) report(true)
}
// Only keeps a broken run from hanging the test; the test's verdict is the report.
setTimeout(() => report(false), 60_000)
