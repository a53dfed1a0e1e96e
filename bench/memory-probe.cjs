// Preloaded into `opencode serve` by startup.ts (`node --require`). On SIGUSR2 it writes one JSON line
// to file descriptor 3: the process's memory as it stands (`rss`, `heapUsed`), then the same after a
// full garbage collection (`rssAfterGc`, `heapUsedAfterGc`: what the heap really holds; `heapTotalAfterGc`:
// what V8 keeps committed for it, which a full collection does not give back). Node's own
// APIs only: the server's code is not touched, and nothing runs until the signal arrives.
"use strict"
const fs = require("node:fs")
const v8 = require("node:v8")
const vm = require("node:vm")

v8.setFlagsFromString("--expose-gc")
const gc = vm.runInNewContext("gc")

process.on("SIGUSR2", () => {
  const before = process.memoryUsage()
  gc()
  const after = process.memoryUsage()
  fs.writeSync(
    3,
    `${JSON.stringify({ rss: before.rss, heapUsed: before.heapUsed, rssAfterGc: after.rss, heapUsedAfterGc: after.heapUsed, heapTotalAfterGc: after.heapTotal })}\n`
  )
})
