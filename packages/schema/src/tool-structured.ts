export * as ToolStructured from "./tool-structured.js"

import { Schema } from "effect"

/**
 * The `structured` value each built-in tool settles with (in `session.next.tool.success` and the
 * completed tool state): the machine-readable result that clients read, in the shapes upstream's
 * built-in tools give it (the contract itself only says "an object"). The model never sees it; what
 * it sees is the tool's `content`.
 *
 * None of these carries an identifier: they are not components of the wire contract. A result the
 * upstream tool gives as a bare array (glob, grep) is an object `{ value: [...] }` on the wire, as
 * upstream wraps it. `task`, `plan_enter` / `plan_exit`, `skill`'s `location` and `grep`'s `searched`
 * are ours.
 */

/** `bash`: the exit code (absent when the command timed out or was killed), and whether output was cut. */
export const Bash = Schema.Struct({
  exit: Schema.optional(Schema.Number),
  /** The captured output exceeded the in-memory limit and its middle was dropped. */
  truncated: Schema.Boolean,
  timeout: Schema.optional(Schema.Boolean),
  /** The signal that ended the command (ours: set only when it was killed by one). */
  signal: Schema.optional(Schema.String)
})
export type Bash = typeof Bash.Type

/** `read` of a whole file: its content as text (`utf8`) or, for an image, as `base64`. */
export const FileContent = Schema.Struct({
  /** The file's `file://` URL (of its real path). */
  uri: Schema.String,
  name: Schema.optional(Schema.String),
  content: Schema.String,
  encoding: Schema.Literal("utf8", "base64"),
  mime: Schema.String
})
export type FileContent = typeof FileContent.Type

/** `read` of a part of a text file: the lines from `offset` (1-based); `next` continues when truncated. */
export const TextPage = Schema.Struct({
  type: Schema.Literal("text-page"),
  /** The lines returned, without numbers, joined with "\n" (a very long line is cut). */
  content: Schema.String,
  mime: Schema.String,
  offset: Schema.Int,
  truncated: Schema.Boolean,
  next: Schema.optional(Schema.Int)
})
export type TextPage = typeof TextPage.Type

/** One entry of a directory or of a search result; a directory's path ends with the separator. */
export const Entry = Schema.Struct({
  path: Schema.String,
  type: Schema.Literal("file", "directory")
})
export type Entry = typeof Entry.Type

/** `read` of a directory: a page of its entries; `next` continues when truncated. */
export const ListPage = Schema.Struct({
  entries: Schema.Array(Entry),
  truncated: Schema.Boolean,
  next: Schema.optional(Schema.Int)
})
export type ListPage = typeof ListPage.Type

/** `read`: whichever of the three it returned. */
export const Read = Schema.Union(FileContent, TextPage, ListPage)
export type Read = typeof Read.Type

/** `write`: the file written (`target` its real path, `resource` as the Location names it). */
export const Write = Schema.Struct({
  operation: Schema.Literal("write"),
  target: Schema.String,
  resource: Schema.String,
  existed: Schema.Boolean
})
export type Write = typeof Write.Type

/** One changed file: its unified diff and line counts (upstream's SnapshotFileDiff, fully set). */
export const FileDiff = Schema.Struct({
  file: Schema.String,
  patch: Schema.String,
  additions: Schema.NonNegativeInt,
  deletions: Schema.NonNegativeInt,
  status: Schema.Literal("added", "deleted", "modified")
})
export type FileDiff = typeof FileDiff.Type

/** `edit`: the file changed and how many occurrences were replaced. */
export const Edit = Schema.Struct({
  files: Schema.Array(FileDiff),
  replacements: Schema.NonNegativeInt
})
export type Edit = typeof Edit.Type

/** One operation `apply_patch` applied, in order. */
export const AppliedOperation = Schema.Struct({
  type: Schema.Literal("add", "update", "delete"),
  resource: Schema.String,
  target: Schema.String
})
export type AppliedOperation = typeof AppliedOperation.Type

/** `apply_patch`: the operations applied and the resulting diff of each file. */
export const ApplyPatch = Schema.Struct({
  applied: Schema.Array(AppliedOperation),
  files: Schema.Array(FileDiff)
})
export type ApplyPatch = typeof ApplyPatch.Type

/** `glob`: the files found (paths relative to the Location), as the model was shown them. */
export const Glob = Schema.Struct({ value: Schema.Array(Entry) })
export type Glob = typeof Glob.Type

/** One line `grep` matched: its file, its 1-based line number and its (possibly cut) text. */
export const GrepMatch = Schema.Struct({
  entry: Entry,
  line: Schema.Int,
  text: Schema.String
})
export type GrepMatch = typeof GrepMatch.Type

/**
 * `grep`: the matches shown to the model, and (ours) how many files the search read: the walk stops
 * once enough lines matched, so this stays near the match limit however large the tree.
 */
export const Grep = Schema.Struct({ value: Schema.Array(GrepMatch), searched: Schema.optional(Schema.Int) })
export type Grep = typeof Grep.Type

/** One todo as `todowrite` keeps it. */
export const Todo = Schema.Struct({
  content: Schema.String,
  status: Schema.String,
  priority: Schema.String
})
export type Todo = typeof Todo.Type

/** `todowrite`: the session's whole todo list after the call. */
export const TodoWrite = Schema.Struct({ todos: Schema.Array(Todo) })
export type TodoWrite = typeof TodoWrite.Type

/** `webfetch`: what was fetched and the text returned (`output`, before output bounding). */
export const WebFetch = Schema.Struct({
  url: Schema.String,
  contentType: Schema.String,
  format: Schema.Literal("text", "markdown", "html"),
  output: Schema.String
})
export type WebFetch = typeof WebFetch.Type

/** `question`: the user's answers, one array of selected labels per question, in order. */
export const Question = Schema.Struct({ answers: Schema.Array(Schema.Array(Schema.String)) })
export type Question = typeof Question.Type

/** `skill`: the skill loaded, its directory and the text given to the model (`location` is ours). */
export const Skill = Schema.Struct({
  name: Schema.String,
  directory: Schema.String,
  output: Schema.String,
  location: Schema.optional(Schema.String)
})
export type Skill = typeof Skill.Type

/** `task` (ours): the subagent's child session and its agent. */
export const Task = Schema.Struct({ sessionID: Schema.String, agent: Schema.String })
export type Task = typeof Task.Type

/** `plan_enter` / `plan_exit` (ours): the agent switched to and the plan file. */
export const Plan = Schema.Struct({ agent: Schema.String, plan: Schema.String })
export type Plan = typeof Plan.Type

/** The structured shape of each built-in tool, by tool name. */
export const byTool = {
  bash: Bash,
  read: Read,
  write: Write,
  edit: Edit,
  apply_patch: ApplyPatch,
  glob: Glob,
  grep: Grep,
  todowrite: TodoWrite,
  webfetch: WebFetch,
  question: Question,
  skill: Skill,
  task: Task,
  plan_enter: Plan,
  plan_exit: Plan
} as const
