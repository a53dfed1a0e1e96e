import * as fs from "node:fs"
import * as path from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { BashPaths } from "../../../src/tool/builtin/bash-paths.js"
import { ToolPath } from "../../../src/tool/builtin/tool-path.js"
import { call, context, project } from "./harness.js"

/** The uses of `command` run in `cwd`, as real paths (`w` marks a write), plus the unknowns. */
const analyze = (command: string, cwd: string) =>
  Effect.map(BashPaths.analyze(command, cwd), (analysis) => ({
    uses: [...new Set(analysis.uses.map((use) => `${use.write ? "w" : "r"} ${ToolPath.realPathSync(use.path)}`))],
    unknownRead: analysis.unknownRead,
    unknownWrite: analysis.unknownWrite
  }))

describe("BashPaths.analyze (tree-sitter-bash)", () => {
  it.live("finds path arguments, redirections and the working directory a command's text shows", () =>
    Effect.gen(function* () {
      const p = project({ "sub/a.txt": "a" })
      const d = p.directory
      const up = p.root
      const known = (...uses: Array<string>) => ({ uses, unknownRead: false, unknownWrite: false })
      const table: ReadonlyArray<
        readonly [string, ReturnType<typeof known> | { unknownRead: true; unknownWrite: boolean }]
      > = [
        ["cat /etc/passwd", known("r /etc/passwd")],
        ["echo x > ../outside.txt", known(`w ${up}/outside.txt`)],
        ["echo x >> log 2>&1 && cat < sub/a.txt 2>/dev/null", known(`w ${d}/log`, `r ${d}/sub/a.txt`)],
        ["cd .. && ls", known(`r ${up}`)],
        ["cd sub && cat ../x", known(`r ${d}/sub`, `r ${d}/x`)],
        ["(cd sub); cat ../x", known(`r ${d}/sub`, `r ${up}/x`)],
        ["false && cd sub; cat ../x", known(`r ${d}/sub`, `r ${d}/x`, `r ${up}/x`)],
        ["cd sub && echo hi > ../f", known(`r ${d}/sub`, `w ${d}/f`)],
        ["cp a ../b; mv c d; rm -rf e", known(`r ${d}/a`, `w ${up}/b`, `w ${d}/c`, `w ${d}/d`, `w ${d}/e`)],
        ["sed -i 's/a/b/' f.txt; sed 's/a/b/' g.txt", known(`w ${d}/f.txt`, `r ${d}/g.txt`)],
        ["grep -rn pattern ../other; chmod 755 h", known(`r ${up}/other`, `w ${d}/h`)],
        ["echo hi | tee -a t.log; touch u; mkdir -p v/w", known(`w ${d}/t.log`, `w ${d}/u`, `w ${d}/v/w`)],
        ["cat <<EOF > g\nnot/a/path\nEOF", known(`w ${d}/g`)],
        ["sudo -u bob rm /y; env A=1 cat /z", known("w /y", "r /z")],
        ["bash -c 'cat /etc/shadow'", known("r /etc/shadow")],
        ['for f in *.ts ../x; do cat "$f"; done', known(`r ${d}`, `r ${up}/x`)],
        ["find ../src -name '*.ts' -delete", known(`w ${up}/src`)],
        ["git -C /elsewhere status; echo /not/a/read", known("r /elsewhere")],
        ["x=$(cat /etc/hostname) true", known("r /etc/hostname")],
        ["cat $f", { unknownRead: true, unknownWrite: false }],
        ['rm "$HOME/x"', { unknownRead: true, unknownWrite: true }],
        ["find . | xargs rm", { unknownRead: true, unknownWrite: true }],
        ['cd "$d" && cat x', { unknownRead: true, unknownWrite: false }],
        ["echo $((", { unknownRead: true, unknownWrite: true }]
      ]
      for (const [command, expected] of table) {
        const got = yield* analyze(command, d)
        if ("uses" in expected) expect({ command, ...got }).toEqual({ command, ...expected })
        else
          expect({ command, unknownRead: got.unknownRead, unknownWrite: got.unknownWrite }).toEqual({
            command,
            ...expected
          })
      }
    })
  )

  it.live("a `..` after a symlinked directory climbs from its target, as the kernel opens it", () =>
    Effect.gen(function* () {
      const p = project()
      fs.mkdirSync(path.join(p.outside, "deep"))
      fs.symlinkSync(path.join(p.outside, "deep"), p.file("link"))
      expect((yield* analyze("cat link/../secret", p.directory)).uses).toEqual([`r ${p.outside}/secret`])
    })
  )
})

describe("ToolPath with a symlinked Location", () => {
  it.live("the Location is compared by its real path: through a symlinked project directory nothing asks", () =>
    Effect.gen(function* () {
      const p = project({ "a.txt": "hello\n" })
      const alias = path.join(p.root, "alias")
      fs.symlinkSync(p.directory, alias)
      const { ctx, asks } = context(alias)
      yield* call("read", { path: "a.txt" }, ctx)
      yield* call("write", { path: path.join(p.directory, "b.txt"), content: "b" }, ctx)
      yield* call("bash", { command: `cat ${path.join(p.directory, "a.txt")} > c.txt` }, ctx)
      expect(asks.map((ask) => ask.action)).toEqual(["read", "edit", "edit", "bash"])
      expect(asks[1]!.resources).toEqual(["b.txt"])
      expect(fs.readFileSync(p.file("c.txt"), "utf8")).toBe("hello\n")
    })
  )
})
