export * as Generate from "./generate.js"

import * as fs from "node:fs"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { Api, OpenApiDocument } from "../../packages/protocol/src/index.js"
import { EffectEmitter } from "./effect-emitter.js"
import { SdkContract } from "./ir.js"
import { PromiseEmitter } from "./promise-emitter.js"

/** The repository root. */
export const root = fileURLToPath(new URL("../..", import.meta.url))

/** Where the SDK Contract IR is checked in, relative to {@link root}. */
export const contractPath = "packages/client/sdk-contract.json"

/** Directories whose every file is generated: a file there that the generator does not emit is stale. */
export const ownedDirectories: ReadonlyArray<string> = [PromiseEmitter.directory, EffectEmitter.directory]

export interface File {
  /** Relative to {@link root}, with `/` separators. */
  readonly path: string
  readonly content: string
}

/** Where the OpenAPI document of the API is checked in (also served at `/doc`). */
export const openApiPath = "packages/protocol/openapi.json"

/** Every generated file: the OpenAPI document, the IR reflected from `Api.OpenCodeApi`, then each emitter's output. */
export const files = (): ReadonlyArray<File> => {
  const contract = SdkContract.fromApi(Api.OpenCodeApi)
  return [
    { path: openApiPath, content: OpenApiDocument.render() },
    { path: contractPath, content: SdkContract.serialize(contract) },
    ...PromiseEmitter.emit(contract),
    ...EffectEmitter.emit(contract)
  ]
}

export interface Result {
  /** Files that differ from what the generator emits, are missing, or should not exist, sorted. */
  readonly stale: ReadonlyArray<string>
}

/**
 * Compares the checked-in generated files with a fresh generation. With `check: false` it also brings
 * them up to date (writing changed files and deleting extraneous ones in the owned directories); with
 * `check: true` it changes nothing. Either way it reports what was (or would have been) stale.
 * `root` (the repository root by default) is where the files are compared and written.
 */
export const run = (options: { readonly check: boolean; readonly root?: string }): Result => {
  const base = options.root ?? root
  const expected = files()
  const stale: Array<string> = []
  for (const file of expected) {
    const absolute = path.join(base, file.path)
    const current = fs.existsSync(absolute) ? fs.readFileSync(absolute, "utf8") : undefined
    if (current === file.content) continue
    stale.push(file.path)
    if (!options.check) {
      fs.mkdirSync(path.dirname(absolute), { recursive: true })
      fs.writeFileSync(absolute, file.content)
    }
  }
  const emitted = new Set(expected.map((file) => file.path))
  for (const directory of ownedDirectories) {
    for (const file of listFiles(base, directory)) {
      if (emitted.has(file)) continue
      stale.push(file)
      if (!options.check) fs.rmSync(path.join(base, file))
    }
  }
  return { stale: stale.sort() }
}

const listFiles = (base: string, directory: string): ReadonlyArray<string> => {
  const absolute = path.join(base, directory)
  if (!fs.existsSync(absolute)) return []
  return fs
    .readdirSync(absolute, { withFileTypes: true })
    .flatMap((entry) =>
      entry.isDirectory() ? listFiles(base, `${directory}/${entry.name}`) : [`${directory}/${entry.name}`]
    )
}
