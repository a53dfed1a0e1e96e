export * as CommandTemplate from "./command-template.js"

/**
 * Command templates: how a prompt names a command, and how the command's template becomes the
 * prompt that is admitted.
 *
 * **Invocation** ({@link invocation}): a prompt whose text starts with `/` followed by a name (no
 * whitespace before the slash) names the command of that name; everything after the name and the
 * whitespace that follows it is the argument string. Whether such a command exists is the caller's
 * question: text that names no command is an ordinary prompt.
 *
 * **Expansion** ({@link expand}), in this order:
 * 1. arguments ({@link substitute}): the argument string is split into arguments at whitespace,
 *    except inside double or single quotes (the quotes are dropped). `$1`, `$2`, … become the
 *    argument at that position (nothing when there is none), except that the highest position the
 *    template uses takes that argument and every one after it, joined by single spaces.
 *    `$ARGUMENTS` becomes the whole argument string as typed. A template that uses neither gets the
 *    argument string appended after a blank line (when there is one). The result is trimmed.
 * 2. file references ({@link fileReferences}): each `@path` in the result (an `@` not preceded by a
 *    letter, digit, `_` or backtick; trailing `.`, `;`, `:`, `!`, `?` and `)` are not part of the
 *    path, so a sentence's punctuation is not) that names an
 *    existing file or directory, relative to the Location directory or `~/…` for the home
 *    directory, becomes a `file://` attachment of the prompt named by the path as written. The text
 *    keeps the mention. A path that names nothing is left as text (it may be an agent mention).
 *    Admission then confines and resolves the attachments as it does for any prompt.
 * 3. shell output: each `` !`command` `` is replaced by the combined output of running `command`
 *    in the Location directory ({@link CommandShell}, bounded and with a timeout). Snippets run
 *    one after another, in the order they appear.
 * These match upstream OpenCode's command templates.
 */

import * as os from "node:os"
import * as nodePath from "node:path"
import { pathToFileURL } from "node:url"
import { FileSystem } from "@effect/platform"
import type { AdmittedPrompt } from "@opencode-ai/schema"
import { Effect, Option } from "effect"
import { CommandShell } from "./command-shell.js"

/** A prompt's command invocation: the command's name and the argument string. */
export interface Invocation {
  readonly name: string
  readonly arguments: string
}

/** The command a prompt text names, if it has the `/name …` form (see the module doc). Pure. */
export const invocation = (text: string): Option.Option<Invocation> => {
  const match = /^\/([^\s/][^\s]*)(?:\s+([\s\S]*))?$/.exec(text)
  if (match === null) return Option.none()
  return Option.some({ name: match[1]!, arguments: (match[2] ?? "").trim() })
}

/** The arguments of an argument string: whitespace-separated, quotes grouping and dropped. Pure. */
export const parseArguments = (input: string): ReadonlyArray<string> =>
  [...input.matchAll(/"([^"]*)"|'([^']*)'|[^\s"']+/g)].map((match) => match[1] ?? match[2] ?? match[0])

const placeholder = /\$(ARGUMENTS|\d+)/g

/** Step 1 of the expansion: the template with its argument placeholders filled (see the module doc). Pure. */
export const substitute = (template: string, input: string): string => {
  const args = parseArguments(input)
  let last = 0
  let usesArguments = false
  for (const match of template.matchAll(placeholder)) {
    if (match[1] === "ARGUMENTS") usesArguments = true
    else last = Math.max(last, Number(match[1]))
  }
  const filled = template.replace(placeholder, (_, which: string) => {
    if (which === "ARGUMENTS") return input
    const position = Number(which)
    if (position < 1 || position > args.length) return ""
    return position === last ? args.slice(position - 1).join(" ") : args[position - 1]!
  })
  if (last === 0 && !usesArguments && input.trim() !== "") return `${filled}\n\n${input}`.trim()
  return filled.trim()
}

/** The distinct `@path` references of `text`, in order of first appearance (see the module doc). Pure. */
export const fileReferences = (text: string): ReadonlyArray<string> => {
  const found = new Set<string>()
  for (const match of text.matchAll(/(?<![\w`])@([^\s`,]+)/g)) {
    const path = match[1]!.replace(/[.;:!?)]+$/, "")
    if (path !== "") found.add(path)
  }
  return [...found]
}

const shellSnippet = /!`([^`]+)`/g

/** The `` !`…` `` snippets of `text`, in order. Pure. */
export const shellSnippets = (text: string): ReadonlyArray<string> => [...text.matchAll(shellSnippet)].map((m) => m[1]!)

/** What a template expands to: the prompt text and the files its `@path` references attach. */
export interface Expanded {
  readonly text: string
  readonly files: ReadonlyArray<AdmittedPrompt.PromptInputFileAttachment>
}

export interface ExpandOptions {
  /** The Location directory: where paths resolve and snippets run. */
  readonly directory: string
  /** The home directory, for `@~/…` (default: the host's). */
  readonly home?: string
  readonly shell?: CommandShell.Options
}

/** Expands `template` with the argument string `input` (see the module doc). */
export const expand = (
  template: string,
  input: string,
  options: ExpandOptions
): Effect.Effect<Expanded, CommandShell.CommandShellError, FileSystem.FileSystem> =>
  Effect.gen(function* () {
    const fs = yield* FileSystem.FileSystem
    const substituted = substitute(template, input)
    const home = options.home ?? os.homedir()
    const files = yield* Effect.forEach(fileReferences(substituted), (reference) => {
      const target = reference.startsWith("~/")
        ? nodePath.join(home, reference.slice(2))
        : nodePath.resolve(options.directory, reference)
      return fs.stat(target).pipe(
        Effect.map(
          (info): Option.Option<AdmittedPrompt.PromptInputFileAttachment> =>
            info.type === "File" || info.type === "Directory"
              ? Option.some({ uri: pathToFileURL(target).href, name: reference })
              : Option.none()
        ),
        Effect.orElseSucceed(() => Option.none())
      )
    }).pipe(Effect.map((found) => found.flatMap(Option.toArray)))
    const snippets = shellSnippets(substituted)
    if (snippets.length === 0) return { text: substituted, files }
    const outputs = yield* Effect.forEach(snippets, (snippet) =>
      CommandShell.run(snippet, options.directory, options.shell)
    )
    let index = 0
    return { text: substituted.replace(shellSnippet, () => outputs[index++] ?? ""), files }
  })
