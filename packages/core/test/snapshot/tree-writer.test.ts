import { execFileSync } from "node:child_process"
import * as fs from "node:fs"
import { syncBuiltinESMExports } from "node:module"
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
/** Sets the times of everything under `root` (and `root`) an hour back: nothing of it is racy then. */
const age = (root: string) => {
  const past = new Date(Date.now() - 3_600_000)
  const walk = (directory: string) => {
    for (const entry of fs.readdirSync(directory, { withFileTypes: true })) {
      const full = path.join(directory, entry.name)
      if (entry.isDirectory()) walk(full)
      fs.lutimesSync(full, past, past)
    }
  }
  walk(root)
  fs.utimesSync(root, past, past)
}

/** Calls `f`, counting the calls it makes of each of `names` (functions of `node:fs`). */
const counting = <A>(
  names: ReadonlyArray<string>,
  f: () => A
): { readonly result: A; readonly calls: Record<string, number> } => {
  const module = fs as unknown as { default: Record<string, (...args: Array<unknown>) => unknown> }
  const calls: Record<string, number> = {}
  const originals = names.map((name) => [name, module.default[name]!] as const)
  for (const [name, original] of originals) {
    calls[name] = 0
    module.default[name] = (...args) => {
      calls[name]!++
      return original(...args)
    }
  }
  syncBuiltinESMExports()
  try {
    return { result: f(), calls }
  } finally {
    for (const [name, original] of originals) module.default[name] = original
    syncBuiltinESMExports()
  }
}

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

  it("walks an unchanged tree with one lstat per entry: no listing, ignore file or object is read again", () => {
    const root = fixture()
    age(root)
    const { writer } = writerFor(root)
    const expected = gitTree(root)
    expect(writer.write()).toBe(expected)
    const { result, calls } = counting(["readdirSync", "readFileSync", "existsSync", "lstatSync"], () => writer.write())
    expect(result).toBe(expected)
    // One read: the global attributes file's, which is looked for at every walk.
    expect(calls).toMatchObject({ readdirSync: 0, readFileSync: 1, existsSync: 0 })
    expect(calls.lstatSync).toBeGreaterThan(20)
  })

  it("sees through kept listings and rules: an added file, an edited .gitignore and file with their times put back, a rename, a removed directory", () => {
    const root = fixture()
    age(root)
    const { writer } = writerFor(root)
    expect(writer.write()).toBe(gitTree(root))
    const back = (name: string) => {
      const stat = fs.statSync(path.join(root, name))
      return () => fs.utimesSync(path.join(root, name), stat.atime, stat.mtime)
    }
    // A new file changes its directory's times.
    put(root, "a/second.txt", "second\n")
    expect(writer.write()).toBe(gitTree(root))
    // Edited in place with their modification times put back: the change times still differ.
    const gitignoreBack = back("docs/.gitignore")
    fs.writeFileSync(path.join(root, "docs/.gitignore"), "*.md\n")
    gitignoreBack()
    const fileBack = back("a0")
    fs.writeFileSync(path.join(root, "a0"), "ZERO\n")
    fileBack()
    expect(writer.write()).toBe(gitTree(root))
    // A rename with the directory's times put back, then a directory removed.
    const namesBack = back("names")
    fs.renameSync(path.join(root, "names/with space.txt"), path.join(root, "names/renamed.txt"))
    namesBack()
    expect(writer.write()).toBe(gitTree(root))
    fs.rmSync(path.join(root, "src"), { recursive: true })
    expect(writer.write()).toBe(gitTree(root))
  })
})
