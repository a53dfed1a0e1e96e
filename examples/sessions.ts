// Creates two sessions on a running `opencode serve` and lists them with the Promise client.
//   node --import tsx examples/sessions.ts [http://127.0.0.1:4096]
import { createOpencodeClient, isInvalidRequestError } from "@opencode-ai/client"

const client = createOpencodeClient({ baseUrl: process.argv[2] ?? "http://127.0.0.1:4096" })

console.log("health:", await client.health.get())
const location = await client.location.get()
console.log("project:", location.project.id, "at", location.directory)

for (const agent of ["build", "plan"]) {
  const session = await client.sessions.create({ agent })
  console.log("created", session.id, session.title)
}

const page = await client.sessions.list({ limit: 10 })
for (const session of page.items) console.log("-", session.id, session.agent ?? "(default agent)", session.title)
if (page.next) console.log("more:", (await client.sessions.list({ cursor: page.next })).items.length)

// Every session, a page of 50 at a time.
let total = 0
for await (const each of client.sessions.listPages({ limit: 50 })) total += each.items.length
console.log("sessions in all:", total)

await client.sessions
  .list({ limit: 1000 })
  .catch((e) => console.log("rejected:", isInvalidRequestError(e) ? e.message : e))
