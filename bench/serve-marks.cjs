// Preloaded into `opencode serve` by step-overhead.ts (`node --require`). Writes to file descriptor 3,
// one line each, the wall-clock instant (ms, `performance.timeOrigin + performance.now()`) at which
// the server received a prompt request (`received`), ended its response (`responded`), created a
// provider request (`created`) and sent that request's head (`sent`). Node's diagnostics channels
// only: the server's code is not touched.
"use strict"
const diagnostics = require("node:diagnostics_channel")
const fs = require("node:fs")
const { performance } = require("node:perf_hooks")

const mark = (kind) => fs.writeSync(3, `${kind} ${(performance.timeOrigin + performance.now()).toFixed(3)}\n`)
const isProviderRequest = (request) => request.method === "POST" && request.path.endsWith("/chat/completions")

diagnostics.subscribe("http.server.request.start", ({ request, response }) => {
  if (request.method !== "POST" || !/^\/api\/session\/[^/]+\/prompt$/.test(request.url)) return
  mark("received")
  const end = response.end
  response.end = function (...args) {
    mark("responded")
    return end.apply(this, args)
  }
})
diagnostics.subscribe("undici:request:create", ({ request }) => {
  if (isProviderRequest(request)) mark("created")
})
diagnostics.subscribe("undici:client:sendHeaders", ({ request }) => {
  if (isProviderRequest(request)) mark("sent")
})
