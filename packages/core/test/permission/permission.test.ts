import { AgentCatalog, Permission, Wildcard } from "@opencode-ai/core"
import { describe, expect, it } from "vitest"

const rule = (action: string, resource: string, effect: Permission.Effect_): Permission.Rule => ({
  action,
  resource,
  effect
})

describe("Wildcard (upstream semantics)", () => {
  it.each([
    // `*` crosses path separators, dots and newlines.
    ["*", "/repo/src/.env", true],
    ["*", "", true],
    ["*", "../outside", true],
    ["*.env", "/repo/config/.env", true],
    ["*.env", "../.env", true],
    ["*.env", "/repo/.env.local", false],
    ["*.env.*", "/repo/.env.local", true],
    ["*.env.example", "/repo/.env.example", true],
    ["/data/tool-output/*", "/data/tool-output/tool_1/out.txt", true],
    ["/data/tool-output/*", "/data/tool-output", false],
    ["src/*.ts", "src/deep/file.ts", true],
    ["rm *", "rm -rf /a/../b", true],
    ["git *", "git commit -m 'one\ntwo'", true],
    // A trailing " *" is optional.
    ["ls *", "ls", true],
    ["ls *", "ls -la", true],
    ["ls *", "lsof", false],
    // `?` is exactly one character.
    ["file?.txt", "file1.txt", true],
    ["file?.txt", "file/.txt", true],
    ["file?.txt", "file12.txt", false],
    // Everything else is literal, anchored at both ends.
    ["a[bc]", "a[bc]", true],
    ["a[bc]", "ab", false],
    ["{a,b}", "a", false],
    ["!secret", "!secret", true],
    ["!secret", "public", false],
    ["echo $(date)", "echo $(date)", true],
    ["a.b", "aXb", false],
    ["bash", "bash2", false],
    ["https://example.com/page?q=1", "https://example.com/page?q=1", true],
    // Backslashes read as slashes.
    ["C:\\repo\\*", "C:/repo/file", true],
    ["C:/repo/*", "C:\\repo\\file", true]
  ])("%j matches %j: %s", (pattern, value, expected) => {
    expect(Wildcard.match(value, pattern)).toBe(expected)
  })
})

describe("Permission.evaluate", () => {
  it.each([
    ["no rule matches → ask", [], "read", "a.ts", "ask"],
    ["one rule", [rule("read", "*", "allow")], "read", "a.ts", "allow"],
    ["the last match wins", [rule("read", "*", "deny"), rule("read", "*", "allow")], "read", "a.ts", "allow"],
    ["…in either direction", [rule("read", "*", "allow"), rule("read", "*", "deny")], "read", "a.ts", "deny"],
    [
      "a later non-matching rule does not count",
      [rule("read", "*", "deny"), rule("read", "*.md", "allow")],
      "read",
      "a.ts",
      "deny"
    ],
    [
      "a specific rule after a general one",
      [rule("*", "*", "allow"), rule("read", "*.env", "ask")],
      "read",
      "/p/.env",
      "ask"
    ],
    [
      "a general rule after a specific one overrides it",
      [rule("read", "*.env", "ask"), rule("*", "*", "allow")],
      "read",
      "/p/.env",
      "allow"
    ],
    ["the action is a wildcard too", [rule("web*", "*", "deny")], "webfetch", "https://x", "deny"],
    ["other actions are untouched", [rule("web*", "*", "deny")], "read", "x", "ask"],
    ["bash prefixes", [rule("bash", "*", "ask"), rule("bash", "git *", "allow")], "bash", "git status", "allow"],
    [
      "…and what they do not cover",
      [rule("bash", "*", "ask"), rule("bash", "git *", "allow")],
      "bash",
      "rm -rf /",
      "ask"
    ]
  ] as const)("%s", (_name, rules, action, resource, expected) => {
    expect(Permission.evaluate(rules, action, resource)).toBe(expected)
  })

  it("decide: deny beats ask beats allow across resources, naming the deciding one; no resource reads as *", () => {
    const rules = [rule("*", "*", "allow"), rule("edit", "*.lock", "deny"), rule("edit", "*.env", "ask")]
    expect(Permission.decide(rules, "edit", ["a.ts", "b.ts"])).toEqual({ effect: "allow" })
    expect(Permission.decide(rules, "edit", ["a.ts", ".env"])).toEqual({ effect: "ask", resource: ".env" })
    expect(Permission.decide(rules, "edit", [".env", "pnpm.lock", "a.ts"])).toEqual({
      effect: "deny",
      resource: "pnpm.lock"
    })
    expect(Permission.decide([rule("bash", "*", "ask"), rule("bash", "git *", "allow")], "bash", [])).toEqual({
      effect: "ask",
      resource: "*"
    })
  })
})

describe("merge order: defaults, agent, config, session", () => {
  const options = { dataDir: "/data" }
  const defaults = AgentCatalog.defaults(options)
  const plan = AgentCatalog.builtins(options).plan.rules.slice(defaults.length)

  it("each later layer overrides the earlier ones", () => {
    const config = AgentCatalog.fromConfig({ permission: { edit: { "docs/*": "allow" }, bash: "ask" } })
    const session = Permission.fromSaved([{ action: "bash", resource: "git *" }])
    const rules = Permission.merge(defaults, plan, config, session)
    // defaults: everything allowed, `.env` reads ask, outside directories ask (managed output allowed).
    expect(Permission.evaluate(rules, "read", "/repo/src/a.ts")).toBe("allow")
    expect(Permission.evaluate(rules, "read", "/repo/.env")).toBe("ask")
    expect(Permission.evaluate(rules, "read", "/repo/.env.example")).toBe("allow")
    expect(Permission.evaluate(rules, "external_directory", "/etc/hosts")).toBe("ask")
    expect(Permission.evaluate(rules, "external_directory", "/data/tool-output/tool_1")).toBe("allow")
    // agent (plan): edits denied except plan files.
    expect(Permission.evaluate(rules, "edit", "src/a.ts")).toBe("deny")
    expect(Permission.evaluate(rules, "edit", ".opencode/plans/p.md")).toBe("allow")
    // config: overrides the agent for docs, makes bash ask.
    expect(Permission.evaluate(rules, "edit", "docs/readme.md")).toBe("allow")
    expect(Permission.evaluate(rules, "bash", "rm x")).toBe("ask")
    // session: a saved permission answers the ask.
    expect(Permission.evaluate(rules, "bash", "git status")).toBe("allow")
    // Reordered, the config no longer wins over the agent.
    expect(Permission.evaluate(Permission.merge(defaults, config, plan), "edit", "docs/readme.md")).toBe("deny")
  })

  it("AgentCatalog.resolve builds an agent's ruleset as defaults, built-in, config (global then agent)", () => {
    const build = AgentCatalog.builtins(options).build.rules
    const global = AgentCatalog.fromConfig({ permission: { bash: "deny" } })
    const agent = AgentCatalog.fromConfig({ permission: { bash: { "git *": "allow" } } })
    const rules = [...build, ...global, ...agent]
    expect(Permission.evaluate(rules, "bash", "git log")).toBe("allow")
    expect(Permission.evaluate(rules, "bash", "curl x")).toBe("deny")
    expect(Permission.evaluate(rules, "question", "*")).toBe("allow")
  })
})

describe("Permission.visibleTools", () => {
  const tools = ["bash", "edit", "write", "apply_patch", "read", "grep", "glob", "question", "todowrite", "webfetch"]
  const agents = AgentCatalog.builtins({})

  it.each([
    ["build", tools],
    // Edits are denied except plan files: the edit tools stay offered and are refused per call.
    ["plan", tools],
    ["general", tools.filter((t) => t !== "question" && t !== "todowrite")],
    ["explore", ["read", "grep", "glob", "webfetch"]],
    ["compaction", []],
    ["title", []]
  ] as const)("%s", (name, visible) => {
    expect(Permission.visibleTools(agents[name].rules, tools)).toEqual(visible)
  })

  it("hides only tools denied for every resource; a later rule can bring one back", () => {
    expect(Permission.visibleTools([rule("bash", "*", "deny")], ["bash", "read"])).toEqual(["read"])
    // Denied only for some resources: offered, refused per call.
    expect(Permission.visibleTools([rule("bash", "rm *", "deny")], ["bash"])).toEqual(["bash"])
    expect(Permission.visibleTools([rule("*", "*", "deny"), rule("bash", "git *", "allow")], ["bash", "read"])).toEqual(
      ["bash"]
    )
    // The file-writing tools are governed by `edit`.
    expect(Permission.visibleTools([rule("edit", "*", "deny")], ["write", "apply_patch", "multiedit", "read"])).toEqual(
      ["read"]
    )
  })
})
