export * as BashPaths from "./bash-paths.js"

import * as nodeFs from "node:fs"
import { createRequire } from "node:module"
import * as os from "node:os"
import * as path from "node:path"
import { Effect } from "effect"
import type { Node, Parser } from "web-tree-sitter"
import type { ToolRegistry } from "../tool-registry.js"
import { ToolPath } from "./tool-path.js"

/**
 * The paths a bash command touches, as far as its text shows them, for confinement and the `edit`
 * permission (see BashTool).
 *
 * The command is parsed with tree-sitter's bash grammar (`web-tree-sitter` with the `tree-sitter-bash`
 * wasm, both loaded from their npm packages once per process). The walk collects:
 *
 * - every redirection target (`>`, `>>`, `>|`, `&>`, `&>>`, `<>`, `>& file` written; `<` read); here-docs,
 *   here-strings and fd duplications (`2>&1`) name no file; `/dev/null`, `/dev/std*`, `/dev/fd/*` and
 *   the like are skipped;
 * - the path arguments of common file commands: read (cat, ls, head, tail, grep/rg path arguments, find
 *   roots, sed without `-i`, diff, …) and write (rm, mv, cp's and ln's destination, mkdir, touch, tee,
 *   chmod, chown, truncate, sed `-i`, `find … -delete/-exec`, dd `of=`, …); through wrappers (sudo, env,
 *   command, exec, nice, nohup, time, timeout, xargs) and into `bash -c '…'` / `eval` strings;
 * - for any other command, its arguments that look like paths (`/…`, `~/…`, `..`, `../…`) as reads.
 *
 * The working directory is tracked through `cd`/`pushd` (logical, as bash's `cd`; `cd -P` physical):
 * within `a && b`, `a; b` the directory a `cd` leads to replaces the current one when it exists; after a
 * conditional part (`||`, `&&`'s right side, if/case/loop bodies) both directories remain possible and
 * paths are checked against each. Subshells, pipelines, `$( )`, and `&` jobs do not change it.
 *
 * What the text cannot show is reported as UNKNOWN, never dropped: a command the parser cannot parse,
 * a dynamic path argument of a file command (`cat "$f"`, `rm $(…)`), a dynamic command name, a relative
 * path after the working directory became untrackable (`cd "$d"`, `cd -`, `popd`, a loop or function
 * that changes directory, relative paths inside function bodies), and writes through `xargs`.
 * Unknown paths could be anywhere; BashTool asks for them conservatively. Not seen at all: what a program
 * does on its own (`python -c "open('/x','w')"`, a script's body, `git` internals).
 */

/** One path the command touches: absolute, as the shell would open it (not normalized: `link/..`). */
export interface PathUse {
  readonly path: string
  readonly write: boolean
}

export interface Analysis {
  readonly uses: ReadonlyArray<PathUse>
  /** Some path could not be determined (see the module doc): it may lie anywhere. */
  readonly unknownRead: boolean
  /** Some write's path could not be determined. */
  readonly unknownWrite: boolean
  /** Why, for each unknown (deduplicated), for the ask's metadata. */
  readonly reasons: ReadonlyArray<string>
}

const requireFrom = createRequire(import.meta.url)
let loading: Promise<Parser> | undefined

/**
 * The bash parser, loaded once, on the first command checked (the wasm files ship in the two npm
 * packages; nothing is downloaded). `web-tree-sitter` itself is imported then too, so a server that
 * runs no bash command never loads it.
 */
const parser = (): Promise<Parser> => {
  loading ??= (async () => {
    const { Language, Parser } = await import("web-tree-sitter")
    await Parser.init()
    const language = await Language.load(requireFrom.resolve("tree-sitter-bash/tree-sitter-bash.wasm"))
    const created = new Parser()
    created.setLanguage(language)
    return created
  })()
  return loading
}

interface Cwd {
  /** `$PWD` as bash keeps it (symlinks not resolved). */
  readonly logical: string
  /** The real directory, which relative paths are opened from. */
  readonly physical: string
}

interface State {
  readonly cwds: ReadonlyArray<Cwd>
  /** The working directory can no longer be told: relative paths are unknown. */
  readonly unknown: boolean
}

type Value =
  | { readonly kind: "static"; readonly text: string; readonly glob: boolean; readonly tilde: boolean }
  | { readonly kind: "dynamic" }
  /** A loop variable (`for f in a b; do … "$f"`): one of the loop's static words. */
  | { readonly kind: "choices"; readonly values: ReadonlyArray<Value> }

type Mode = "read" | "write"

/** Files that are not files (or that every process may use): never confined. */
const isDevice = (text: string) =>
  /^\/dev\/(null|zero|full|random|urandom|tty|stdin|stdout|stderr|fd\/\d+)$/.test(text) ||
  /^\/proc\/self\/fd\/\d+$/.test(text)

const readAll = new Set([
  "cat",
  "ls",
  "head",
  "tail",
  "less",
  "more",
  "wc",
  "file",
  "stat",
  "du",
  "diff",
  "cmp",
  "realpath",
  "readlink",
  "tree",
  "nl",
  "od",
  "xxd",
  "hexdump",
  "strings",
  "md5sum",
  "sha1sum",
  "sha256sum",
  "sha512sum",
  "cksum",
  "sort",
  "uniq",
  "cut",
  "tac",
  "rev",
  "paste",
  "column",
  "base64",
  "source",
  ".",
  "bat",
  "zcat",
  "unzip"
])
/** Read commands whose first positional argument is a pattern or program, not a path. */
const readAfterPattern = new Set(["grep", "egrep", "fgrep", "rg", "ag", "ack", "awk", "gawk", "jq", "sed"])
/** Commands that default to the working directory when given no path. */
const cwdByDefault = new Set(["ls", "find", "du", "tree", "rg", "ag", "ack"])
const writeAll = new Set(["rm", "rmdir", "mkdir", "touch", "tee", "truncate", "shred", "unlink", "mv"])
/** Write commands whose first positional argument is a mode or owner. */
const writeAfterFirst = new Set(["chmod", "chown", "chgrp"])
/** Commands that read their sources and write their last argument (or `-t dir`). */
const copyLike = new Set(["cp", "ln", "install", "rsync"])
/** Commands whose arguments are never paths. */
const noPaths = new Set([
  "echo",
  "printf",
  "true",
  "false",
  ":",
  "export",
  "unset",
  "set",
  "exit",
  "return",
  "test",
  "[",
  "basename",
  "dirname"
])
/** Wrappers that run the rest of their arguments as a command (after their own options). */
const wrappers = new Set([
  "sudo",
  "doas",
  "env",
  "command",
  "builtin",
  "exec",
  "nice",
  "nohup",
  "time",
  "stdbuf",
  "ionice"
])
/** Wrapper options that take a separate value. */
const wrapperValueOptions: Readonly<Record<string, ReadonlySet<string>>> = {
  sudo: new Set(["-u", "-g", "-C", "-D", "-h", "-p", "-r", "-t", "-U"]),
  nice: new Set(["-n"]),
  ionice: new Set(["-c", "-n", "-p"]),
  xargs: new Set(["-I", "-n", "-P", "-L", "-d", "-E", "-s", "-a"]),
  timeout: new Set(["-s", "-k", "--signal", "--kill-after"])
}
const shells = new Set(["bash", "sh", "zsh", "dash", "ksh"])
const cdLike = new Set(["cd", "pushd"])

const unquote = (text: string) => text.replace(/\\(.)/gs, "$1")
const hasGlob = (raw: string) => /[*?[]|\{[^}]*[,.][^}]*\}/.test(raw.replace(/\\./gs, ""))

/** The value of an argument node, when its text does not depend on the shell's state. */
const wordValue = (node: Node, loops: ReadonlyMap<string, ReadonlyArray<Value>> = new Map()): Value => {
  const loopVariable = (expansion: Node): Value | undefined => {
    const name = expansion.type === "simple_expansion" ? expansion.namedChildren[0] : undefined
    const values = name?.type === "variable_name" ? loops.get(name.text) : undefined
    return values === undefined ? undefined : { kind: "choices", values }
  }
  switch (node.type) {
    case "simple_expansion":
      return loopVariable(node) ?? { kind: "dynamic" }
    case "word":
    case "number": {
      const raw = node.text
      return { kind: "static", text: unquote(raw), glob: hasGlob(raw), tilde: raw.startsWith("~") }
    }
    case "raw_string":
      return { kind: "static", text: node.text.slice(1, -1), glob: false, tilde: false }
    case "string": {
      const only = node.namedChildren.length === 1 ? node.namedChildren[0] : undefined
      const variable = only === undefined ? undefined : loopVariable(only)
      if (variable !== undefined) return variable
      let text = ""
      for (const child of node.namedChildren) {
        if (child.type !== "string_content") return { kind: "dynamic" }
        text += child.text.replace(/\\([$`"\\\n])/g, "$1")
      }
      return { kind: "static", text, glob: false, tilde: false }
    }
    case "concatenation": {
      let text = ""
      let glob = false
      let tilde = false
      node.namedChildren.forEach((child, index) => {
        const part = wordValue(child)
        if (part.kind !== "static") {
          glob = true
          text = "\0"
          return
        }
        if (index === 0) tilde = part.tilde
        glob ||= part.glob
        text += part.text
      })
      if (text.includes("\0")) return { kind: "dynamic" }
      return { kind: "static", text, glob: glob || hasGlob(node.text), tilde }
    }
    default:
      return { kind: "dynamic" }
  }
}

const union = (a: ReadonlyArray<Cwd>, b: ReadonlyArray<Cwd>): ReadonlyArray<Cwd> => {
  const seen = new Map<string, Cwd>()
  for (const cwd of [...a, ...b]) seen.set(`${cwd.logical}\0${cwd.physical}`, cwd)
  return [...seen.values()]
}
const merge = (a: State, b: State): State => ({ cwds: union(a.cwds, b.cwds), unknown: a.unknown || b.unknown })

/** How a statement may leave the working directory (see `Walk.outcome`). */
interface Outcome {
  readonly ok: State
  readonly fail: State
  readonly entry: State
}
const same = (state: State): Outcome => ({ ok: state, fail: state, entry: state })
const settle = (outcome: Outcome): State => merge(outcome.ok, outcome.fail)

const isDirectory = (target: string) => {
  try {
    return nodeFs.statSync(target).isDirectory()
  } catch {
    return false
  }
}

/** Whether `node` holds a command that may change the working directory. */
const changesDirectory = (node: Node): boolean =>
  node.descendantsOfType("command_name").some((name) => {
    const text = path.basename(name.text)
    return cdLike.has(text) || text === "popd" || text === "source" || text === "."
  })

class Walk {
  readonly uses: Array<PathUse> = []
  unknownRead = false
  unknownWrite = false
  readonly reasons = new Set<string>()
  /** The loop variables in scope, with the static words they take (see {@link Value}). */
  readonly loops = new Map<string, ReadonlyArray<Value>>()
  /** Nesting of `bash -c` / `eval` strings, bounded. */
  depth = 0

  unknown(mode: Mode, reason: string) {
    this.unknownRead = true
    if (mode === "write") this.unknownWrite = true
    this.reasons.add(reason)
  }

  /** Records `value` as a path read or written from the working directories of `state`. */
  path(value: Value, mode: Mode, state: State, what: string) {
    if (value.kind === "choices") {
      for (const choice of value.values) this.path(choice, mode, state, what)
      return
    }
    if (value.kind === "dynamic") return this.unknown(mode, `${what}: a path that depends on the shell's state`)
    let text = value.text
    if (text === "" || text === "-" || isDevice(text)) return
    if (value.tilde && (text === "~" || text.startsWith("~/"))) text = os.homedir() + text.slice(1)
    else if (value.tilde) return this.unknown(mode, `${what}: another user's home directory`)
    if (value.glob) {
      const first = text.search(/[*?[{]/)
      const prefix = text.slice(0, first)
      text = prefix.includes("/") ? prefix.slice(0, prefix.lastIndexOf("/") + 1) || "/" : "."
    }
    const write = mode === "write"
    if (path.isAbsolute(text)) {
      this.uses.push({ path: text, write })
      return
    }
    if (state.unknown) return this.unknown(mode, `${what}: a relative path after an untracked change of directory`)
    for (const cwd of state.cwds) this.uses.push({ path: `${cwd.physical}/${text}`, write })
  }

  /** The states a walk may leave, for callers that do not care whether it succeeded. */
  walk(node: Node, state: State): State {
    return settle(this.outcome(node, state))
  }

  /**
   * Walks `node` from `state`: the states after it succeeded and after it failed (an `&&` continues
   * from the first, an `||` from the second, a `;` from either), and the state its last simple
   * command starts from (where tree-sitter hangs `a && b > f`'s redirection, which is `b`'s).
   */
  outcome(node: Node, state: State): Outcome {
    switch (node.type) {
      case "program":
      case "compound_statement":
      case "do_group":
        return this.sequence(node.children, state)
      case "list": {
        const [left, right] = node.namedChildren
        const operator = node.children.find((child) => child !== null && !child.isNamed)?.type
        if (left === undefined || right === undefined || node.namedChildren.length !== 2) {
          return this.sequence(node.children, state)
        }
        const first = this.outcome(left, state)
        if (operator === "||") {
          const second = this.outcome(right, first.fail)
          return { ok: merge(first.ok, second.ok), fail: second.fail, entry: second.entry }
        }
        const second = this.outcome(right, first.ok)
        return { ok: second.ok, fail: merge(first.fail, second.fail), entry: second.entry }
      }
      case "pipeline":
        for (const child of node.namedChildren) this.walk(child, state)
        return same(state)
      case "subshell":
      case "command_substitution":
      case "process_substitution":
        this.sequence(node.children, state)
        return same(state)
      case "redirected_statement": {
        const body = node.childForFieldName("body")
        const result = body === null ? same(state) : this.outcome(body, state)
        // On a list the redirection is its last command's; on a group, loop or pipeline it applies
        // before the body runs.
        const at = body?.type === "list" ? result.entry : state
        for (const child of node.namedChildren) if (child.id !== body?.id) this.walk(child, at)
        return result
      }
      case "file_redirect":
        this.redirect(node, state)
        return same(state)
      case "heredoc_redirect":
      case "herestring_redirect":
        // The body is data; a redirection written after the here-doc's start is still a file.
        for (const child of node.namedChildren) if (child.type === "file_redirect") this.redirect(child, state)
        return same(state)
      case "if_statement":
      case "elif_clause":
      case "else_clause":
      case "case_statement":
      case "case_item":
      case "while_statement":
      case "for_statement":
      case "c_style_for_statement": {
        // Any branch may run (a loop body any number of times): every state reached stays possible.
        // A `for` over static words binds its variable to them for the body.
        const variable = node.type === "for_statement" ? node.childForFieldName("variable") : null
        if (variable !== null) {
          const values = node.childrenForFieldName("value").map((word) => wordValue(word, this.loops))
          if (values.length > 0 && values.every((value) => value.kind === "static")) {
            const previous = this.loops.get(variable.text)
            this.loops.set(variable.text, values)
            try {
              return this.loop(node, state)
            } finally {
              if (previous === undefined) this.loops.delete(variable.text)
              else this.loops.set(variable.text, previous)
            }
          }
          // A variable over dynamic words stays unknown; an outer one of that name no longer applies.
          const previous = this.loops.get(variable.text)
          this.loops.delete(variable.text)
          try {
            return this.loop(node, state)
          } finally {
            if (previous !== undefined) this.loops.set(variable.text, previous)
          }
        }
        return this.loop(node, state)
      }
      case "function_definition": {
        // The body runs wherever the function is called from: its relative paths are unknown.
        const body = node.childForFieldName("body")
        if (body !== null) this.walk(body, { ...state, unknown: true })
        return same(changesDirectory(node) ? { ...state, unknown: true } : state)
      }
      case "command":
        return this.command(node, state)
      default:
        return this.sequence(node.children, state)
    }
  }

  /** A conditional or loop: every state its parts reach stays possible; a loop that cd's is untracked. */
  loop(node: Node, state: State): Outcome {
    let reached = state
    for (const child of node.namedChildren) reached = merge(reached, this.walk(child, reached))
    const loop = node.type === "while_statement" || node.type.endsWith("for_statement")
    return same(loop && changesDirectory(node) ? { ...reached, unknown: true } : reached)
  }

  /** Named children in order; a statement followed by `&` runs as a job and changes nothing after it. */
  sequence(children: ReadonlyArray<Node | null>, state: State): Outcome {
    let last = same(state)
    children.forEach((child, index) => {
      if (child === null || !child.isNamed) return
      const start = settle(last)
      const next = children[index + 1]
      if (next?.type === "&") {
        this.walk(child, start)
        last = same(start)
      } else last = this.outcome(child, start)
    })
    return last
  }

  redirect(node: Node, state: State) {
    const operator = node.children.find((child) => child !== null && !child.isNamed)?.type ?? ">"
    const destination = node.childForFieldName("destination") ?? node.namedChildren.at(-1) ?? null
    if (destination === null) return
    this.walk(destination, state)
    if (operator === "<&" || operator === ">&-" || operator === "<&-") return
    if ((operator === ">&" || operator === "&>") && destination.type === "number") return
    if (operator === ">&" && destination.text === "-") return
    this.path(wordValue(destination, this.loops), operator === "<" ? "read" : "write", state, `redirection ${operator}`)
  }

  command(node: Node, state: State): Outcome {
    const words: Array<Node> = []
    for (const child of node.namedChildren) {
      if (child.type === "variable_assignment") this.walk(child, state)
      else if (child.type === "file_redirect" || child.type.endsWith("_redirect")) this.walk(child, state)
      else {
        // Substitutions inside the words run first, in their own subshell.
        this.walk(child, state)
        words.push(child.type === "command_name" ? (child.namedChildren[0] ?? child) : child)
      }
    }
    return this.run(
      words.map((word) => wordValue(word, this.loops)),
      state
    )
  }

  /** Classifies one simple command by its words (the name first). */
  run(words: ReadonlyArray<Value>, state: State, viaXargs = false): Outcome {
    let index = 0
    while (index < words.length) {
      const head = words[index]!
      if (head.kind !== "static") {
        this.unknown("write", "a command whose name depends on the shell's state")
        return same(state)
      }
      const name = path.basename(head.text)
      if (name === "xargs" || name === "timeout" || wrappers.has(name)) {
        const valued = wrapperValueOptions[name] ?? new Set<string>()
        index++
        while (index < words.length) {
          const word = words[index]!
          if (word.kind !== "static") break
          if (name === "env" && /^[A-Za-z_][A-Za-z0-9_]*=/.test(word.text)) index++
          else if (word.text.startsWith("-") && word.text !== "-") index += valued.has(word.text) ? 2 : 1
          else break
        }
        if (name === "timeout") index++
        if (name === "xargs") viaXargs = true
        continue
      }
      break
    }
    if (index >= words.length) return same(state)
    const name = path.basename((words[index] as { text: string }).text)
    const args = words.slice(index + 1)
    return this.classify(name, args, state, viaXargs)
  }

  classify(name: string, args: ReadonlyArray<Value>, state: State, viaXargs: boolean): Outcome {
    const what = name
    // Options and positionals; `--opt=value` values that look like paths are kept too.
    const positional: Array<Value> = []
    const options: Array<string> = []
    const optionValues: Array<Value> = []
    let ended = false
    for (const arg of args) {
      if (!ended && arg.kind === "static" && arg.text === "--") ended = true
      else if (!ended && arg.kind === "static" && arg.text.startsWith("-") && arg.text !== "-") {
        options.push(arg.text)
        const eq = arg.text.indexOf("=")
        if (eq > 0 && arg.text.startsWith("--")) {
          optionValues.push({ ...arg, text: arg.text.slice(eq + 1), tilde: arg.text.slice(eq + 1).startsWith("~") })
        }
      } else positional.push(arg)
    }
    const looksLikePath = (value: Value) =>
      value.kind === "static" &&
      (path.isAbsolute(value.text) ||
        value.text.startsWith("~") ||
        value.text === ".." ||
        value.text.startsWith("../") ||
        value.text.includes("/../") ||
        value.text.endsWith("/.."))
    const pathLikeOptions = (mode: Mode) => {
      for (const value of optionValues) if (looksLikePath(value)) this.path(value, mode, state, what)
    }
    const all = (values: ReadonlyArray<Value>, mode: Mode) => {
      for (const value of values) this.path(value, mode, state, what)
    }
    if (viaXargs && (writeAll.has(name) || writeAfterFirst.has(name) || copyLike.has(name) || name === "sed")) {
      this.unknown("write", `${name} through xargs: paths from its input`)
    }

    if (cdLike.has(name)) {
      const target = positional[0] ?? { kind: "static", text: "~", glob: false, tilde: true }
      if (target.kind === "static" && target.text === "-") return same({ ...state, unknown: true })
      this.path(target, "read", state, what)
      if (target.kind !== "static" || target.glob) return same({ ...state, unknown: true })
      const text = target.tilde ? os.homedir() + target.text.slice(1) : target.text
      const physicalMode = options.includes("-P")
      const next: Array<Cwd> = []
      let fails = false
      for (const cwd of state.cwds) {
        const logical = physicalMode
          ? ToolPath.realPathSync(path.isAbsolute(text) ? text : `${cwd.physical}/${text}`)
          : path.resolve(cwd.logical, text)
        const physical = ToolPath.realPathSync(logical)
        next.push({ logical: physicalMode ? physical : logical, physical })
        if (!isDirectory(physical)) fails = true
      }
      // Succeeded, the cd leads to its directory. It fails only if a directory does not exist (yet: the
      // command may create it), and then the directory stays.
      return {
        ok: { cwds: next, unknown: state.unknown },
        fail: fails ? state : { cwds: [], unknown: state.unknown },
        entry: state
      }
    }
    if (name === "popd") return same({ ...state, unknown: true })
    if (shells.has(name) || name === "eval") {
      const script = name === "eval" ? args : positional.slice(0, 1)
      const runsString = name === "eval" || options.some((option) => /^-[a-z]*c[a-z]*$/.test(option))
      if (!runsString) {
        all(positional.slice(0, 1), "read")
        return same(state)
      }
      if (script.some((value) => value.kind !== "static") || this.depth >= 4) {
        this.unknown("write", `${name}: a command string that depends on the shell's state`)
        return same(state)
      }
      this.depth++
      const text = script.map((value) => (value as { text: string }).text).join(" ")
      const nested = this.nested?.(text, state)
      this.depth--
      return same(name === "eval" && nested !== undefined ? nested : state)
    }
    if (noPaths.has(name)) return same(state)

    if (readAll.has(name)) {
      all(positional, "read")
      if (positional.length === 0 && cwdByDefault.has(name)) all([dot], "read")
      pathLikeOptions("read")
      return same(state)
    }
    if (readAfterPattern.has(name)) {
      const explicit =
        name === "awk" || name === "gawk"
          ? options.some((option) => option === "-f" || option.startsWith("--file"))
          : options.some((option) => /^-[a-zA-Z]*[ef]$/.test(option) || /^--(regexp|file|expression)/.test(option))
      const paths = explicit ? positional : positional.slice(1)
      const inPlace =
        name === "sed" && options.some((option) => /^-[a-zA-Z]*i/.test(option) || option.startsWith("--in-place"))
      all(paths, inPlace ? "write" : "read")
      if (paths.length === 0 && cwdByDefault.has(name)) all([dot], "read")
      pathLikeOptions(inPlace ? "write" : "read")
      return same(state)
    }
    if (name === "find") {
      const roots: Array<Value> = []
      for (const arg of args) {
        if (arg.kind === "static" && (arg.text.startsWith("-") || arg.text === "(" || arg.text === "!")) break
        roots.push(arg)
      }
      const writes = args.some(
        (arg) => arg.kind === "static" && /^-(delete|exec|execdir|ok|okdir|fprint|fprint0|fprintf|fls)$/.test(arg.text)
      )
      all(roots.length === 0 ? [dot] : roots, writes ? "write" : "read")
      for (const arg of args.slice(roots.length))
        if (looksLikePath(arg)) this.path(arg, writes ? "write" : "read", state, what)
      return same(state)
    }
    if (writeAll.has(name)) {
      all(positional, "write")
      pathLikeOptions("write")
      return same(state)
    }
    if (writeAfterFirst.has(name)) {
      all(positional.slice(options.some((option) => option.startsWith("--reference")) ? 0 : 1), "write")
      return same(state)
    }
    if (copyLike.has(name)) {
      const target = options.findIndex((option) => option === "-t" || option.startsWith("--target-directory"))
      if (target >= 0 || positional.length < 2) {
        all(positional, target >= 0 ? "read" : "write")
        if (target >= 0) pathLikeOptions("write")
        if (target >= 0 && !options[target]!.includes("=")) {
          // `-t dir`: the directory is the first positional here (options were split off).
          all(positional.slice(0, 1), "write")
        }
      } else {
        all(positional.slice(0, -1), "read")
        all(positional.slice(-1), "write")
      }
      return same(state)
    }
    if (name === "dd") {
      for (const arg of args) {
        if (arg.kind !== "static") continue
        if (arg.text.startsWith("if="))
          this.path({ ...arg, text: arg.text.slice(3), tilde: arg.text.startsWith("if=~") }, "read", state, what)
        if (arg.text.startsWith("of="))
          this.path({ ...arg, text: arg.text.slice(3), tilde: arg.text.startsWith("of=~") }, "write", state, what)
      }
      return same(state)
    }
    // Any other program: its arguments that look like paths.
    for (const arg of [...positional, ...optionValues]) if (looksLikePath(arg)) this.path(arg, "read", state, what)
    return same(state)
  }

  /** Set by {@link analyze}: walks a nested command string (`bash -c`, `eval`) from `state`. */
  nested?: (text: string, state: State) => State | undefined
}

const dot: Value = { kind: "static", text: ".", glob: false, tilde: false }

/**
 * The paths `command` touches when bash runs it in `cwd` (absolute; its real path is taken), per the
 * module doc. Never fails: what cannot be told is reported as unknown.
 */
export const analyze = (command: string, cwd: string): Effect.Effect<Analysis> =>
  Effect.promise(() => parser().catch(() => undefined)).pipe(
    Effect.map((loaded) => {
      const walk = new Walk()
      if (loaded === undefined) {
        walk.unknown("write", "the shell parser could not be loaded")
        return walk
      }
      const parse = (text: string, state: State): State | undefined => {
        const tree = loaded.parse(text)
        try {
          if (tree === null || tree.rootNode.hasError) {
            walk.unknown("write", "the command could not be parsed")
            return undefined
          }
          return walk.walk(tree.rootNode, state)
        } finally {
          tree?.delete()
        }
      }
      walk.nested = parse
      parse(command, { cwds: [{ logical: cwd, physical: ToolPath.realPathSync(cwd) }], unknown: false })
      return walk
    }),
    Effect.map((walk) => ({
      uses: walk.uses,
      unknownRead: walk.unknownRead,
      unknownWrite: walk.unknownWrite,
      reasons: [...walk.reasons]
    }))
  )

/** The file commands of {@link analyze} that need no ask stay silent; see {@link authorize}. */
const existingDirectory = isDirectory

/**
 * Authorizes what `command` touches when run in `cwd`, before the bash ask (see the module doc):
 *
 * - every path whose real path lies outside the Location asks `external_directory`, one ask naming
 *   each directory as `ToolPath.authorize` does (`<dir>/*`; a directory itself for a directory);
 * - every path it writes asks `edit` for its real path relative to the Location (as the edit tools
 *   name files), one ask: under the plan agent, which denies edits, the command is refused before it
 *   runs; under build the edit rules apply (normally allow);
 * - unknown paths ask conservatively: `external_directory` on `*` (default rules: ask) and, for an
 *   unknown write, `edit` on `*`.
 */
export const authorize = (
  context: ToolRegistry.CallContext,
  command: string,
  cwd: string
): Effect.Effect<void, ToolRegistry.ToolFailure> =>
  Effect.gen(function* () {
    const analysis = yield* analyze(command, cwd)
    const realDir = yield* ToolPath.locationDir(context)
    const outside = new Set<string>()
    const outsidePaths = new Set<string>()
    const written = new Set<string>()
    const writtenPaths = new Set<string>()
    for (const use of analysis.uses) {
      const target = yield* ToolPath.classify(context, realDir, use.path)
      if (!target.inside) {
        outside.add(ToolPath.externalResource(target.path, existingDirectory(target.path) ? "directory" : "file"))
        outsidePaths.add(target.path)
      }
      if (use.write) {
        written.add(target.name)
        writtenPaths.add(target.path)
      }
    }
    if (analysis.unknownRead) outside.add("*")
    if (analysis.unknownWrite) written.add("*")
    const reasons = analysis.reasons.length === 0 ? {} : { reasons: analysis.reasons }
    if (outside.size > 0) {
      yield* context.ask({
        action: "external_directory",
        resources: [...outside],
        metadata: { command, paths: [...outsidePaths], ...reasons }
      })
    }
    if (written.size > 0) {
      yield* context.ask({
        action: "edit",
        resources: [...written],
        metadata: { command, files: [...writtenPaths], ...reasons }
      })
    }
  })
