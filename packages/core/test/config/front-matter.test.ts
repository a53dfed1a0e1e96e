import { Either } from "effect"
import { describe, expect, it } from "vitest"
import { FrontMatter } from "../../src/config/front-matter.js"

describe("FrontMatter.parse", () => {
  it("splits the YAML mapping from the trimmed body", () => {
    expect(FrontMatter.parse("---\ndescription: Review\nsubtask: true\n---\n\nReview @$1\n\n")).toEqual(
      Either.right({ _tag: "Found", data: { description: "Review", subtask: true }, body: "Review @$1" })
    )
  })

  it("accepts a byte order mark, CRLF line ends and trailing blanks on the fences", () => {
    expect(FrontMatter.parse("\uFEFF--- \r\nname: x\r\n---\t\r\nBody\r\n")).toEqual(
      Either.right({ _tag: "Found", data: { name: "x" }, body: "Body" })
    )
  })

  it("an empty block has no keys; a file without a first `---` line is all body", () => {
    expect(FrontMatter.parse("---\n---\nBody")).toEqual(Either.right({ _tag: "Found", data: undefined, body: "Body" }))
    expect(FrontMatter.parse("\n---\nname: x\n---\nBody\n")).toEqual(
      Either.right({ _tag: "Absent", body: "---\nname: x\n---\nBody" })
    )
  })

  it("names the problem, with the file's line where YAML names one", () => {
    expect(FrontMatter.parse("---\nname: x\nBody")).toEqual(
      Either.left({ reason: "the front matter is not closed by a `---` line" })
    )
    const duplicate = FrontMatter.parse("---\nname: a\nname: b\n---\n")
    expect(Either.isLeft(duplicate) && duplicate.left.line).toBe(3)
    expect(Either.isLeft(duplicate) && duplicate.left.reason).toMatch(/^invalid YAML front matter: /)
    expect(FrontMatter.parse("---\n- a\n- b\n---\n")).toEqual(
      Either.left({ reason: "the front matter must be a mapping of keys to values" })
    )
  })
})
