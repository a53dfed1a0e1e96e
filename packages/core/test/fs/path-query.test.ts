import { describe, expect, it } from "vitest"
import { PathQuery } from "../../src/fs/path-query.js"

const score = (query: string, path: string) => PathQuery.score(PathQuery.terms(query), path)

describe("PathQuery", () => {
  it("ranks the whole name over its start, over inside the name, over a segment start, over inside, over a subsequence", () => {
    const ranked = [
      score("app", "src/app"),
      score("app", "src/apple.ts"),
      score("app", "src/my-app.ts"),
      score("app", "app/main.ts"),
      score("app", "src/webapp/main.ts"),
      score("app", "src/a/p/p.ts")
    ]
    expect(ranked.every((value) => value !== undefined)).toBe(true)
    for (let index = 1; index < ranked.length; index++) expect(ranked[index - 1]!).toBeGreaterThan(ranked[index]!)
  })

  it("is case-insensitive, needs every term, and a tighter subsequence scores higher", () => {
    expect(score("README", "docs/readme.md")).toBeDefined()
    expect(score("src main", "src/main.ts")).toBeDefined()
    expect(score("src zzz", "src/main.ts")).toBeUndefined()
    expect(score("xyz", "src/main.ts")).toBeUndefined()
    expect(score("mts", "main.ts")!).toBeGreaterThan(score("mts", "m/a/i/n/x/y/z.ts")!)
    expect(score("", "anything")).toBe(0)
  })

  it("keeps the best `limit` in order: score, then shorter path, then code-unit order", () => {
    const best = PathQuery.top<string>(3)
    for (const [path, value] of [
      ["b/long.ts", 10],
      ["a.ts", 10],
      ["b.ts", 10],
      ["worst.ts", 1],
      ["best.ts", 50]
    ] as const)
      best.offer({ score: value, path, value: path })
    expect(best.result().map((ranked) => ranked.path)).toEqual(["best.ts", "a.ts", "b.ts"])
  })
})
