// Preloaded into `opencode serve` by step-overhead.ts (`node --require`). Records the wall-clock
// instant (ms, `performance.timeOrigin + performance.now()`) at which the server received a prompt
// request (`received`), ended its response (`responded`), created a provider request (`created`),
// sent that request's head (`sent`) and ended its response to a `wait` request (`waited`). Node's diagnostics channels only: the server's code is not
// touched. The marks are kept in memory and written to file descriptor 3, one line each and then a
// line `flushed`, when the process gets SIGUSR2: a write per mark would put the pipe's wake-up of the
// reading process (tens of µs on a VM) into the very figures the marks time.
"use strict"
const diagnostics = require("node:diagnostics_channel")
const fs = require("node:fs")
const { performance } = require("node:perf_hooks")

const kinds = []
const instants = []
const mark = (kind) => {
  kinds.push(kind)
  instants.push(performance.timeOrigin + performance.now())
}
process.on("SIGUSR2", () => {
  let text = ""
  for (let i = 0; i < kinds.length; i++) text += `${kinds[i]} ${instants[i].toFixed(3)}\n`
  kinds.length = 0
  instants.length = 0
  fs.writeSync(3, `${text}flushed\n`)
})
const isProviderRequest = (request) => request.method === "POST" && request.path.endsWith("/chat/completions")

diagnostics.subscribe("http.server.request.start", ({ request, response }) => {
  if (request.method !== "POST") return
  const route = /^\/api\/session\/[^/]+\/(prompt|wait)$/.exec(request.url)?.[1]
  if (route === undefined) return
  if (route === "prompt") mark("received")
  const end = response.end
  response.end = function (...args) {
    mark(route === "prompt" ? "responded" : "waited")
    return end.apply(this, args)
  }
})
diagnostics.subscribe("undici:request:create", ({ request }) => {
  if (isProviderRequest(request)) mark("created")
})
diagnostics.subscribe("undici:client:sendHeaders", ({ request }) => {
  if (isProviderRequest(request)) mark("sent")
})
