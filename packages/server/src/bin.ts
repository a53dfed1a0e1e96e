#!/usr/bin/env node
import { fileURLToPath } from "node:url"
import { CodeCache } from "./code-cache.js"

// The entry is this small on purpose: the rest of the server (`main.ts`) is one CommonJS bundle beside
// it, run through V8's code cache. The bytecode is saved two seconds in, when a server has long been
// listening, so the next start finds what this start compiled. A command that ends sooner saves
// nothing: what it compiled would be a poor cache for a server.
const loaded = CodeCache.run(fileURLToPath(new URL("./main.cjs", import.meta.url)))
setTimeout(loaded.save, 2_000).unref()
