/**
 * Steps as history grows: `opencode serve`'s CPU per Step on one session whose history grows to
 * thousands of messages, block by block. Each turn is a prompt, a Step that calls `read` (a three-line
 * file) and a Step that answers with text: three messages. A Step lowers the whole history into its
 * provider request, so whatever that costs per message shows as CPU rising from block to block.
 *
 *   node --import tsx bench/step-depth.ts [--blocks 6] [--turns 100] [--warmup 50] [--bin packages/server/dist/bin.js]
 *
 * The built bin as a child process (its CPU time from `/proc`), against the loopback scripted model in
 * this process (whose own work, parsing ever larger requests, is not counted), after `--warmup` turns
 * on a session of their own (so the first block is not the server's start). Per block: the server's
 * CPU per Step, the wall time per turn, and the size of the last provider request's body. Figures:
 * the CPU per Step of the first and the last block, and their ratio. Printed, never asserted
 * (DESIGN §7.10).
 */

import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { performance } from "node:perf_hooks"
import { LLMScript } from "../packages/core/src/testing/index.js"
import { type Figure, numberFlag, runWhenMain } from "./figures.js"
import { cpuMs, createSession, isTitleRequest, prompt, startLlm, startServer, waitIdle } from "./servers.js"

const { reply, text, toolCall, finish } = LLMScript

export const run = async (): Promise<ReadonlyArray<Figure>> => {
  const blocks = numberFlag("blocks", 6, (value) => value >= 1)
  const turns = numberFlag("turns", 100, (value) => value >= 1)
  const warmup = numberFlag("warmup", 50, (value) => value >= 0)
  const binAt = process.argv.indexOf("--bin")
  const bin = binAt === -1 ? undefined : path.resolve(process.argv[binAt + 1] ?? "")
  const root = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "opencode-step-depth-")))
  let file = ""
  let bodyBytes = 0
  // A turn's first request (the history ends with the prompt) calls `read`; the next one answers.
  const llm = await startLlm((request) => {
    const messages = (request.body as { messages?: ReadonlyArray<{ role?: string }> } | undefined)?.messages ?? []
    if (isTitleRequest(request.body)) return reply(text("Depth"), finish("stop"))
    bodyBytes = Buffer.byteLength(JSON.stringify(request.body))
    return messages.at(-1)?.role === "user"
      ? reply(toolCall(`call_${messages.length}`, "read", { filePath: file }), finish("tool-calls"))
      : reply(text("Read it."), finish("stop"))
  })
  try {
    const server = await startServer("ours", { root, llmUrl: llm.server.url, ...(bin === undefined ? {} : { bin }) })
    file = path.join(server.directory, "notes.txt")
    const api = { url: server.url, directory: server.directory }
    const perStep: Array<number> = []
    try {
      // The server's code warmed up on a session of its own first, so that the first block is not its start.
      const spare = await createSession(api)
      for (let turn = 0; turn < warmup; turn++) {
        await prompt(api, spare, `warm-up ${turn}`)
        await waitIdle(api, spare)
      }
      const session = await createSession(api)
      console.log(`one session, ${blocks} blocks of ${turns} turns (a read Step and a text Step each), opencode serve`)
      console.log("turns        messages   server CPU per Step   wall per turn   last request body")
      for (let block = 0; block < blocks; block++) {
        const cpu = cpuMs(server.pid)
        const started = performance.now()
        for (let turn = 0; turn < turns; turn++) {
          await prompt(api, session, `turn ${block * turns + turn}`)
          await waitIdle(api, session)
        }
        const wall = (performance.now() - started) / turns
        const step = (cpuMs(server.pid) - cpu) / (turns * 2)
        perStep.push(step)
        const done = (block + 1) * turns
        console.log(
          `${`${done - turns}-${done}`.padEnd(12)} ${String(done * 3).padStart(8)}   ${step.toFixed(2).padStart(16)} ms   ${wall.toFixed(2).padStart(10)} ms   ${(bodyBytes / 1024).toFixed(0).padStart(12)} KiB`
        )
      }
    } finally {
      await server.stop()
    }
    const first = perStep[0]!
    const last = perStep[perStep.length - 1]!
    return [
      { name: "step-depth-cpu-first", value: first, unit: "ms" },
      { name: "step-depth-cpu-last", value: last, unit: "ms" },
      { name: "step-depth-growth", value: last / first, unit: "x" }
    ]
  } finally {
    await llm.close()
    fs.rmSync(root, { recursive: true, force: true })
  }
}

runWhenMain(import.meta.url, run)
