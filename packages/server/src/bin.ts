#!/usr/bin/env node
import { CompileCache } from "./compile-cache.js"

// The entry is this small on purpose: V8's compile cache must be on before the bundle's main chunk
// (everything else, `main.ts`) is loaded, and only what is imported after `enable` benefits from it.
CompileCache.enable()
await import("./main.js")
