#!/usr/bin/env node
import { fileURLToPath } from "node:url"
import * as v8 from "node:v8"
import { CodeCache } from "./code-cache.js"

// Much of what a start allocates is kept (modules, schemas, the catalog), and V8 doubles its young
// generation at each busy scavenge, up to 16 MiB a semi-space: a start left some 23 MiB of
// young-generation pages committed for an idle server (RSS 124 MiB, against 101 MiB). So the young
// generation does not grow during the start (more, smaller scavenges: about 15 ms more start CPU),
// and grows as usual afterwards, under real load. Not when the process was given its own
// `--semi-space-growth-factor`.
const tuneYoungGeneration = ![...process.execArgv, process.env.NODE_OPTIONS ?? ""].some((flag) =>
  /semi[-_]space[-_]growth/.test(flag)
)
if (tuneYoungGeneration) v8.setFlagsFromString("--semi-space-growth-factor=1")

// The entry is this small on purpose: the rest of the server (`main.ts`) is one CommonJS bundle beside
// it, run through V8's code cache. The bytecode is saved two seconds in, when a server has long been
// listening, so the next start finds what this start compiled. A command that ends sooner saves
// nothing: what it compiled would be a poor cache for a server. The cache is saved before the growth
// factor is restored: V8 accepts cached data made under the flags it is read with.
const loaded = CodeCache.run(fileURLToPath(new URL("./main.cjs", import.meta.url)))
setTimeout(() => {
  loaded.save()
  if (tuneYoungGeneration) v8.setFlagsFromString("--semi-space-growth-factor=2")
}, 2_000).unref()
