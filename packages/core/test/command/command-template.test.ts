import * as fs from "node:fs"
import * as path from "node:path"
import { pathToFileURL } from "node:url"
import { NodeContext } from "@effect/platform-node"
import { it } from "@effect/vitest"
import { Effect, Either, Exit, Option } from "effect"
import { describe, expect } from "vitest"
import { CommandFile } from "../../src/command/command-file.js"
import { CommandTemplate } from "../../src/command/command-template.js"
import { tempDir } from "../fixture.js"

describe("CommandTemplate.invocation", () => {
  it("takes the name after a leading slash and the rest as the argument string", () => {
    expect(CommandTemplate.invocation("/review src/app.ts  now")).toEqual(
      Option.some({ name: "review", arguments: "src/app.ts  now" })
    )
    expect(CommandTemplate.invocation("/git/commit")).toEqual(Option.some({ name: "git/commit", arguments: "" }))
    expect(CommandTemplate.invocation("/fix\nline two")).toEqual(Option.some({ name: "fix", arguments: "line two" }))
  })

  it("is none for text that does not start with /name", () => {
    expect(CommandTemplate.invocation("please /review")).toEqual(Option.none())
    expect(CommandTemplate.invocation(" /review")).toEqual(Option.none())
    expect(CommandTemplate.invocation("/")).toEqual(Option.none())
    expect(CommandTemplate.invocation("/ review")).toEqual(Option.none())
    expect(CommandTemplate.invocation("//comment")).toEqual(Option.none())
  })
})

describe("CommandTemplate.substitute", () => {
  it("splits arguments at whitespace, quotes grouping and dropped", () => {
    expect(CommandTemplate.parseArguments(`one "two three" 'four five'  six`)).toEqual([
      "one",
      "two three",
      "four five",
      "six"
    ])
  })

  it("$ARGUMENTS is the whole argument string as typed", () => {
    expect(CommandTemplate.substitute("Review $ARGUMENTS carefully", `a "b c"`)).toBe(`Review a "b c" carefully`)
  })

  it("$1, $2 are positional; the highest placeholder takes the rest", () => {
    expect(CommandTemplate.substitute("from $1 to $2", "x y z w")).toBe("from x to y z w")
    expect(CommandTemplate.substitute("$2 then $1 then $3", `a "b c" d e`)).toBe("b c then a then d e")
    // The same position twice: both get the rest when it is the highest.
    expect(CommandTemplate.substitute("$1 and $1", "p q")).toBe("p q and p q")
  })

  it("a missing argument becomes nothing", () => {
    expect(CommandTemplate.substitute("[$1] [$2] [$3]", "only")).toBe("[only] [] []")
  })

  it("a template without placeholders gets the arguments after a blank line", () => {
    expect(CommandTemplate.substitute("Run the tests.", "focus on io")).toBe("Run the tests.\n\nfocus on io")
    expect(CommandTemplate.substitute("  Run the tests.  ", "")).toBe("Run the tests.")
  })

  it("does not substitute inside substituted text", () => {
    expect(CommandTemplate.substitute("$1 / $ARGUMENTS", "$ARGUMENTS")).toBe("$ARGUMENTS / $ARGUMENTS")
  })
})

describe("CommandTemplate.fileReferences", () => {
  it("finds @paths, not e-mail addresses or code spans, without a sentence's final period", () => {
    expect(
      CommandTemplate.fileReferences("Read @src/a.ts and @./b.md. Mail me@example.com, not `@c`, and @src/a.ts again")
    ).toEqual(["src/a.ts", "./b.md"])
  })
})

describe("CommandTemplate.expand", () => {
  const run = (template: string, args: string, directory: string) =>
    CommandTemplate.expand(template, args, { directory, home: path.join(directory, "home") }).pipe(
      Effect.provide(NodeContext.layer)
    )

  it.scopedLive("runs each !`snippet` in the directory with a real shell and puts its output in place", () =>
    Effect.gen(function* () {
      const dir = fs.realpathSync(yield* tempDir)
      fs.writeFileSync(path.join(dir, "marker.txt"), "from the marker file\n")
      const expanded = yield* run("Dir: !`pwd`Cat: !`cat marker.txt; echo oops >&2`Args: $1", "x", dir)
      expect(expanded.text).toBe(`Dir: ${dir}\nCat: from the marker file\noops\nArgs: x`)
      expect(expanded.files).toEqual([])
    })
  )

  it.scopedLive("substitutes arguments before running snippets", () =>
    Effect.gen(function* () {
      const dir = yield* tempDir
      const expanded = yield* run("!`echo $1 | tr a-z A-Z`", "shout", dir)
      expect(expanded.text).toBe("SHOUT\n")
    })
  )

  it.scopedLive("a failing snippet's message is its output", () =>
    Effect.gen(function* () {
      const dir = yield* tempDir
      const expanded = yield* run("Status: !`ls does-not-exist; true`", "", dir)
      expect(expanded.text).toMatch(/^Status: ls: .*does-not-exist.*No such file or directory\n$/)
    })
  )

  it.scopedLive("a snippet that outlives its timeout is killed and fails the expansion", () =>
    Effect.gen(function* () {
      const dir = yield* tempDir
      const pidFile = path.join(dir, "pid")
      const exit = yield* CommandTemplate.expand("!`echo $$ > pid; sleep 30`", "", {
        directory: dir,
        shell: { timeout: "300 millis", killGrace: "200 millis" }
      }).pipe(Effect.provide(NodeContext.layer), Effect.exit)
      expect(Exit.isFailure(exit)).toBe(true)
      if (Exit.isFailure(exit)) expect(String(exit.cause)).toContain("did not finish within")
      const pid = Number(fs.readFileSync(pidFile, "utf8").trim())
      // The snippet's shell is gone: signalling it fails.
      expect(() => process.kill(pid, 0)).toThrow()
    })
  )

  it.scopedLive("bounds a snippet's output", () =>
    Effect.gen(function* () {
      const dir = yield* tempDir
      const expanded = yield* CommandTemplate.expand("!`head -c 5000 /dev/zero | tr '\\0' x`", "", {
        directory: dir,
        shell: { maxChars: 100 }
      }).pipe(Effect.provide(NodeContext.layer))
      expect(expanded.text).toBe(`${"x".repeat(100)}\n[output truncated: 4900 more characters were not kept]`)
    })
  )

  it.scopedLive("@paths naming existing files or directories become file:// attachments; others stay text", () =>
    Effect.gen(function* () {
      const dir = fs.realpathSync(yield* tempDir)
      fs.mkdirSync(path.join(dir, "src"))
      fs.writeFileSync(path.join(dir, "src", "a.ts"), "export {}\n")
      fs.mkdirSync(path.join(dir, "home"))
      fs.writeFileSync(path.join(dir, "home", "notes.md"), "notes\n")
      const expanded = yield* run(
        "Look at @src/a.ts, @src and (@~/notes.md); ask @general about @$1!",
        "missing.ts",
        dir
      )
      expect(expanded.text).toBe("Look at @src/a.ts, @src and (@~/notes.md); ask @general about @missing.ts!")
      expect(expanded.files).toEqual([
        { uri: pathToFileURL(path.join(dir, "src", "a.ts")).href, name: "src/a.ts" },
        { uri: pathToFileURL(path.join(dir, "src")).href, name: "src" },
        { uri: pathToFileURL(path.join(dir, "home", "notes.md")).href, name: "~/notes.md" }
      ])
    })
  )
})

describe("CommandFile.parse", () => {
  it("reads the front matter keys and takes the rest as the template", () => {
    const parsed = CommandFile.parse(
      "\uFEFF---\r\ndescription: Review a file\r\nagent: plan\r\nmodel: openai/gpt-5\r\nsubtask: true\r\nextra: ignored\r\n---\r\n\r\nReview $1.\r\n"
    )
    expect(parsed).toEqual(
      Either.right({
        description: "Review a file",
        agent: "plan",
        model: "openai/gpt-5",
        subtask: true,
        template: "Review $1."
      })
    )
  })

  it("a file without front matter is all template", () => {
    expect(CommandFile.parse("\nJust do it.\n")).toMatchObject({ _tag: "Right", right: { template: "Just do it." } })
  })

  it("names what is wrong with a bad file", () => {
    expect(CommandFile.parse("---\ndescription: x\nno end")).toMatchObject({
      _tag: "Left",
      left: { reason: "the front matter is not closed by a `---` line" }
    })
    expect(CommandFile.parse("---\ndescription: [unclosed\n---\nbody")).toMatchObject({ _tag: "Left" })
    expect(CommandFile.parse("---\nsubtask: maybe\n---\nbody")).toMatchObject({
      _tag: "Left",
      left: { reason: "`subtask` must be true or false" }
    })
    expect(CommandFile.parse("---\nagent: [a, b]\n---\nbody")).toMatchObject({
      _tag: "Left",
      left: { reason: "`agent` must be a string" }
    })
    expect(CommandFile.parse("---\n- a list\n---\nbody")).toMatchObject({
      _tag: "Left",
      left: { reason: "the front matter must be a mapping of keys to values" }
    })
  })
})
