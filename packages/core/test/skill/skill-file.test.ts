import { Either } from "effect"
import { describe, expect, it } from "vitest"
import { SkillFile } from "../../src/skill/skill-file.js"

const invalid = (text: string) => {
  const result = SkillFile.parse(text)
  if (Either.isRight(result)) throw new Error(`expected invalid, got ${JSON.stringify(result.right)}`)
  return result.left
}

describe("SkillFile.parse", () => {
  it("reads name and description from the front matter and the trimmed body after it", () => {
    const parsed = SkillFile.parse(
      [
        "---",
        "name: pdf",
        "description: Work with PDF files",
        "license: MIT",
        "---",
        "",
        "# PDF",
        "",
        "Use pdftotext.",
        ""
      ].join("\n")
    )
    expect(parsed).toEqual(
      Either.right({ name: "pdf", description: "Work with PDF files", content: "# PDF\n\nUse pdftotext." })
    )
  })

  it("accepts quoted and folded YAML values, a byte order mark, CRLF line ends and `slash`", () => {
    const text =
      '\uFEFF---\r\nname: "release-notes"\r\ndescription: >-\r\n  Write release notes\r\n  from the changelog\r\nslash: true\r\n---\r\nBody\r\n'
    expect(SkillFile.parse(text)).toEqual(
      Either.right({
        name: "release-notes",
        description: "Write release notes from the changelog",
        slash: true,
        content: "Body"
      })
    )
  })

  it("an empty body is allowed", () => {
    expect(SkillFile.parse("---\nname: a\ndescription: b\n---")).toEqual(
      Either.right({ name: "a", description: "b", content: "" })
    )
  })

  it("rejects a file without front matter, or with unclosed front matter", () => {
    expect(invalid("# Just markdown\nname: x").message).toBe(
      "line 1: no front matter: the file must start with a `---` line"
    )
    expect(invalid("\n---\nname: a\ndescription: b\n---\n").line).toBe(1)
    expect(invalid("---\nname: a\ndescription: b\n").message).toBe("the front matter is not closed by a `---` line")
  })

  it("rejects invalid YAML with the line in the file", () => {
    // An unquoted `: ` inside a value is a nested mapping, which YAML does not allow there.
    const error = invalid("---\nname: a\ndescription: Use when: deploying\n---\nbody")
    expect(error.line).toBe(3)
    expect(error.message).toMatch(/^line 3: invalid YAML front matter: /)
    expect(invalid("---\nname: a\nname: b\ndescription: c\n---\n").message).toMatch(
      /^line 3: invalid YAML front matter: Map keys must be unique/
    )
    expect(invalid("---\nname: 'a\ndescription: c\n---\n").reason).toMatch(/invalid YAML front matter/)
  })

  it("rejects front matter that is not a mapping", () => {
    expect(invalid("---\n- a\n- b\n---\n").reason).toBe("the front matter must be a mapping of keys to values")
    expect(invalid("---\n---\nbody").reason).toBe("the front matter must be a mapping of keys to values")
  })

  it("rejects a missing, empty or non-string name or description, and a non-boolean slash", () => {
    expect(invalid("---\ndescription: b\n---\n").reason).toBe("`name` must be a non-empty string")
    expect(invalid("---\nname: '  '\ndescription: b\n---\n").reason).toBe("`name` must be a non-empty string")
    expect(invalid("---\nname: 42\ndescription: b\n---\n").reason).toBe("`name` must be a non-empty string")
    expect(invalid("---\nname: |\n  two\n  lines\ndescription: b\n---\n").reason).toBe("`name` must be a single line")
    expect(invalid("---\nname: a\n---\n").reason).toBe("`description` must be a non-empty string")
    expect(invalid("---\nname: a\ndescription: [x]\n---\n").reason).toBe("`description` must be a non-empty string")
    expect(invalid("---\nname: a\ndescription: b\nslash: yes please\n---\n").reason).toBe(
      "`slash` must be true or false"
    )
  })
})
