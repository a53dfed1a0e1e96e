import * as path from "node:path"
import { NodeContext } from "@effect/platform-node"
import { assert, describe, it } from "@effect/vitest"
import { Effect, Either } from "effect"
import { ConfigSource } from "../../src/config/config-source.js"
import { captureLogs, world } from "./world.js"

const parse = (text: string, env: Record<string, string | undefined> = {}, directory = "/nowhere") =>
  ConfigSource.parse({ file: path.join(directory, "opencode.jsonc"), directory, text, env }).pipe(
    Effect.provide(NodeContext.layer)
  )

const failure = <A, E>(result: Either.Either<A, E>): E => {
  if (Either.isRight(result)) throw new Error("expected a failure")
  return result.left
}

describe("ConfigSource", () => {
  it.effect("reads JSONC: comments and trailing commas, in .json files too", () =>
    Effect.gen(function* () {
      const source = yield* parse(`// the global config
{
  /* block */ "model": "local/qwen", // trailing comment
  "instructions": ["a.md", "b.md",],
  "server": { "port": 4096, },
}
`)
      assert.deepStrictEqual(source.info, {
        model: "local/qwen",
        instructions: ["a.md", "b.md"],
        server: { port: 4096 }
      })
    })
  )

  it.effect("an empty document (or only comments) is an empty config", () =>
    Effect.gen(function* () {
      assert.deepStrictEqual((yield* parse("")).info, {})
      assert.deepStrictEqual((yield* parse("// nothing yet\n")).info, {})
    })
  )

  it.effect("a syntax error fails with the line and column jsonc-parser reports", () =>
    Effect.gen(function* () {
      const text = `{
  "model": "a/b",
  "agent": {
    "build": { "steps": 3 }
  }
  "oops": 1
}`
      const error = failure(yield* Effect.either(parse(text)))
      assert.strictEqual(error._tag, "ConfigError")
      assert.strictEqual(error.file, "/nowhere/opencode.jsonc")
      assert.strictEqual(error.line, 6)
      assert.strictEqual(error.column, 3)
      assert.include(error.message, "comma expected")
      assert.strictEqual(error.message, `/nowhere/opencode.jsonc:6:3: ${error.reason}`)
    })
  )

  it.effect("an unterminated document fails at its end", () =>
    Effect.gen(function* () {
      const error = failure(yield* Effect.either(parse(`{\n  "model": "a/b",\n`)))
      assert.strictEqual(error.line, 3)
      assert.include(error.message, "invalid JSONC")
    })
  )

  it.effect("a document that is not an object fails", () =>
    Effect.gen(function* () {
      const error = failure(yield* Effect.either(parse(`["a"]`)))
      assert.include(error.message, "must be a JSON object")
      assert.strictEqual(error.line, 1)
    })
  )

  it.effect("a value of the wrong shape fails with the key path and the value's line", () =>
    Effect.gen(function* () {
      const text = `{
  "agent": {
    "plan": { "steps": 5 },
    "build": {
      "steps": "many"
    }
  }
}`
      const error = failure(yield* Effect.either(parse(text)))
      assert.strictEqual(error.key, "agent.build.steps")
      assert.strictEqual(error.line, 5)
      assert.strictEqual(error.column, 16)
      assert.strictEqual(error.reason, `agent.build.steps: Expected number, actual "many"`)
      assert.strictEqual(
        error.message,
        `/nowhere/opencode.jsonc:5:16: agent.build.steps: Expected number, actual "many"`
      )
    })
  )

  it.effect("union failures are narrowed to the deepest offending value", () =>
    Effect.gen(function* () {
      const error = failure(
        yield* Effect.either(parse(`{ "agent": { "build": { "permission": { "bash": { "*": "maybe" } } } } }`))
      )
      assert.strictEqual(error.key, "agent.build.permission.bash.*")
      assert.strictEqual(
        error.reason,
        `agent.build.permission.bash.*: Expected "allow" | "ask" | "deny", actual "maybe"`
      )
      const top = failure(yield* Effect.either(parse(`{ "permission": 3 }`)))
      assert.strictEqual(top.key, "permission")
      assert.include(top.message, `"allow" | "ask" | "deny" | an object of those, actual 3`)
      const port = failure(yield* Effect.either(parse(`{ "server": { "port": 70000 } }`)))
      assert.strictEqual(port.key, "server.port")
      const items = failure(yield* Effect.either(parse(`{\n"instructions": ["a.md",\n 3]\n}`)))
      assert.strictEqual(items.key, "instructions[1]")
      assert.strictEqual(items.line, 3)
    })
  )

  it.effect("unknown keys are tolerated: dropped, with a warning naming the file and key path", () =>
    Effect.gen(function* () {
      const text = `{
  "theme": "opencode",
  "provider": { "local": { "npm": "@ai-sdk/openai-compatible", "options": { "baseURL": "http://h/v1", "timeout": 5 } } },
  "agent": { "build": { "steps": 3, "colour": "red" } }
}`
      const { result, warnings } = yield* captureLogs(parse(text))
      assert.isTrue(Either.isRight(result))
      assert.deepStrictEqual(Either.getOrThrow(result).info, {
        // a provider's other `options` keys are request options, kept for every model of it
        provider: { local: { npm: "@ai-sdk/openai-compatible", options: { baseURL: "http://h/v1", timeout: 5 } } },
        agent: { build: { steps: 3 } }
      })
      assert.deepStrictEqual(warnings, [
        `Config /nowhere/opencode.jsonc:2:3: unknown key "theme" is ignored`,
        `Config /nowhere/opencode.jsonc:4:37: unknown key "agent.build.colour" is ignored`
      ])
    })
  )

  it.effect("{env:VAR} is substituted in every string value; an unset variable becomes empty, with a warning", () =>
    Effect.gen(function* () {
      const text = `{
  "model": "{env:PROVIDER}/{env:MODEL}",
  "instructions": ["{env:DOCS}/rules.md"],
  "provider": { "p": { "options": { "apiKey": "{env:MISSING}", "headers": { "x-team": "team-{env:TEAM}" } } } }
}`
      const { result, warnings } = yield* captureLogs(
        parse(text, { PROVIDER: "local", MODEL: "qwen", DOCS: "/docs", TEAM: "" })
      )
      const info = Either.getOrThrow(result).info
      assert.strictEqual(info.model, "local/qwen")
      assert.deepStrictEqual(info.instructions, ["/docs/rules.md"])
      assert.deepStrictEqual(info.provider?.p?.options, { apiKey: "", headers: { "x-team": "team-" } })
      assert.deepStrictEqual(warnings, [
        `Config /nowhere/opencode.jsonc:4:47: provider.p.options.apiKey: {env:MISSING} is not set; using ""`
      ])
    })
  )

  it.scoped("{file:path} reads a file relative to the config file (trimmed); an unreadable one fails", () =>
    Effect.gen(function* () {
      const w = yield* world
      w.write(path.join(w.worktree, "prompts", "review.md"), "Review carefully.\n")
      w.write(path.join(w.root, "home", "key.txt"), "sk-home\n")
      const source = yield* parse(
        `{ "agent": { "review": { "prompt": "{file:./prompts/review.md}" } },
           "provider": { "p": { "options": { "apiKey": "{file:~/key.txt}" } } } }`,
        { HOME: path.join(w.root, "home") },
        w.worktree
      )
      assert.strictEqual(source.info.agent?.review?.prompt, "Review carefully.")
      assert.strictEqual(source.info.provider?.p?.options?.apiKey, "sk-home")
      const error = failure(
        yield* Effect.either(parse(`{\n  "agent": { "x": { "prompt": "{file:missing.md}" } }\n}`, {}, w.worktree))
      )
      assert.strictEqual(error.key, "agent.x.prompt")
      assert.strictEqual(error.line, 2)
      assert.include(error.message, "{file:missing.md} cannot be read")
    })
  )
})
