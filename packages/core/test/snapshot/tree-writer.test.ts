import { execFileSync } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { describe, expect, it } from "vitest"
import { TreeWriter } from "../../src/snapshot/tree-writer.js"

/** The tree id git gives for `workTree`, through a shadow repository of its own, as Snapshots runs it. */
const gitTree = (workTree: string): string => {
  const gitDir = fs.mkdtempSync(path.join(os.tmpdir(), "tree-writer-git-"))
  const base = [
    "-c",
    "core.autocrlf=false",
    "-c",
    "core.fsmonitor=false",
    "-c",
    "core.safecrlf=false",
    "-c",
    "core.symlinks=true",
    `--git-dir=${gitDir}`,
    `--work-tree=${workTree}`
  ]
  const env = { ...process.env, HOME: workTree, XDG_CONFIG_HOME: path.join(workTree, ".no-config") }
  execFileSync("git", [...base, "init", "--quiet"], { cwd: workTree, env })
  execFileSync("git", [...base, "add", "--all", "--", "."], { cwd: workTree, env, stdio: "ignore" })
  return execFileSync("git", [...base, "write-tree"], { cwd: workTree, env, encoding: "utf8" }).trim()
}

const writerFor = (workTree: string) => {
  const gitDir = fs.mkdtempSync(path.join(os.tmpdir(), "tree-writer-ours-"))
  execFileSync("git", [`--git-dir=${gitDir}`, "init", "--quiet", "--bare"])
  return { gitDir, writer: TreeWriter.make({ gitDir, workTree }) }
}

const put = (root: string, name: string, content: string, mode?: number) => {
  fs.mkdirSync(path.dirname(path.join(root, name)), { recursive: true })
  fs.writeFileSync(path.join(root, name), content)
  if (mode !== undefined) fs.chmodSync(path.join(root, name), mode)
}

/** A work tree with the cases git's rules differ on: nested ignores, negation, modes, links, order. */
const fixture = () => {
  const root = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "tree-writer-work-")))
  put(root, ".gitignore", "*.log\n/build/\n!keep.log\nnode_modules\ntmp/*\n!tmp/wanted.txt\n")
  put(root, "a.txt", "a\n")
  put(root, "a-b", "dash\n")
  put(root, "a.b", "dot\n")
  put(root, "a0", "zero\n")
  put(root, "a/inner.txt", "inner\n")
  put(root, "run.sh", "#!/bin/sh\necho hi\n", 0o755)
  put(root, "debug.log", "ignored\n")
  put(root, "keep.log", "kept by negation\n")
  put(root, "build/out.js", "ignored directory\n")
  put(root, "src/build/kept.js", "not at the root, so kept\n")
  put(root, "node_modules/x/index.js", "ignored anywhere\n")
  put(root, "tmp/junk.txt", "ignored\n")
  put(root, "tmp/wanted.txt", "re-included\n")
  put(root, "docs/.gitignore", "*.md\n!README.md\n")
  put(root, "docs/guide.md", "ignored here\n")
  put(root, "docs/README.md", "kept\n")
  put(root, "docs/deep/notes.md", "ignored by the parent's rule\n")
  put(root, "docs/deep/.gitignore", "!notes.md\n")
  put(root, "only-ignored/x.log", "a directory holding only ignored files\n")
  put(root, "names/with space.txt", "space\n")
  put(root, "names/ünïcödé.txt", "unicode\n")
  put(root, "names/crlf.txt", "one\r\ntwo\r\n")
  fs.mkdirSync(path.join(root, "empty"))
  fs.symlinkSync("a.txt", path.join(root, "link-to-file"))
  fs.symlinkSync("a", path.join(root, "link-to-dir"))
  fs.symlinkSync("missing", path.join(root, "dangling"))
  fs.mkdirSync(path.join(root, ".git"))
  put(root, ".git/HEAD", "the user's own repository is never snapshotted\n")
  return root
}

describe("TreeWriter", () => {
  it("gives the tree id git gives, for ignores, negations, modes, links, empty directories and order", () => {
    const root = fixture()
    const { writer } = writerFor(root)
    const expected = gitTree(root)
    expect(writer.write()).toBe(expected)
  })

  it("follows changes: an edit of the same size, a mode change, a new file, a deletion", () => {
    const root = fixture()
    const { gitDir, writer } = writerFor(root)
    expect(writer.write()).toBe(gitTree(root))
    put(root, "a.txt", "b\n") // same size, written at once after hashing
    expect(writer.write()).toBe(gitTree(root))
    fs.chmodSync(path.join(root, "a.txt"), 0o755)
    expect(writer.write()).toBe(gitTree(root))
    put(root, "src/new.ts", "export {}\n")
    fs.rmSync(path.join(root, "a0"))
    const id = writer.write()
    expect(id).toBe(gitTree(root))
    // The objects are in the repository: git reads the tree back.
    const listed = execFileSync("git", [`--git-dir=${gitDir}`, "ls-tree", "-r", "--name-only", id!], {
      encoding: "utf8"
    })
    expect(listed.split("\n")).toContain("src/new.ts")
    expect(listed.split("\n")).not.toContain("a0")
  })

  it("an empty work tree is git's empty tree", () => {
    const root = fs.mkdtempSync(path.join(os.tmpdir(), "tree-writer-empty-"))
    expect(writerFor(root).writer.write()).toBe("4b825dc642cb6eb9a060e54bf8d69288fbee4904")
  })

  it("declines what git does more with: attributes, a nested repository, a global attributes file", () => {
    const withAttributes = fixture()
    put(withAttributes, "sub/.gitattributes", "* text=auto\n")
    expect(writerFor(withAttributes).writer.write()).toBeUndefined()

    const nested = fixture()
    fs.mkdirSync(path.join(nested, "vendor/lib/.git"), { recursive: true })
    expect(writerFor(nested).writer.write()).toBeUndefined()

    const root = fixture()
    const attributes = path.join(root, "..", `global-attributes-${path.basename(root)}`)
    fs.writeFileSync(attributes, "* text\n")
    const gitDir = writerFor(root).gitDir
    expect(TreeWriter.make({ gitDir, workTree: root, globalAttributes: attributes }).write()).toBeUndefined()
  })

  it("honours the global excludes file and the repository's info/exclude", () => {
    const root = fixture()
    const { gitDir } = writerFor(root)
    const excludes = path.join(root, "..", `global-excludes-${path.basename(root)}`)
    fs.writeFileSync(excludes, "a.b\n")
    fs.mkdirSync(path.join(gitDir, "info"), { recursive: true })
    fs.writeFileSync(path.join(gitDir, "info", "exclude"), "a-b\n")
    const id = TreeWriter.make({ gitDir, workTree: root, globalExcludes: excludes }).write()
    const listed = execFileSync("git", [`--git-dir=${gitDir}`, "ls-tree", "--name-only", id!], { encoding: "utf8" })
    expect(listed.split("\n")).not.toContain("a.b")
    expect(listed.split("\n")).not.toContain("a-b")
    expect(listed.split("\n")).toContain("a0")
  })
})
