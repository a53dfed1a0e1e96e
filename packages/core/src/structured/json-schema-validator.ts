export * as JsonSchemaValidator from "./json-schema-validator.js"

/**
 * JsonSchemaValidator: a Structured Output's JSON Schema, compiled by Ajv into a validator. Used twice:
 * at admission (a schema that does not compile is refused with a 400, so a session never holds a
 * format it cannot use) and at each Step that offers the `StructuredOutput` tool (its input is
 * validated before it is recorded).
 *
 * - Dialect: draft 2020-12 when the schema's `$schema` names it, else draft-07 (Ajv's default, which
 *   also reads draft-06 documents). Any other `$schema` is refused.
 * - The root must describe an object (`type: "object"`): the schema becomes a tool's input schema,
 *   and both provider protocols take only objects there.
 * - Unknown keywords are tolerated (schemas written for other tools often carry some) and `format`
 *   is not checked (no format vocabulary is loaded); everything else Ajv validates, and a schema that
 *   breaks its meta-schema, or names a `$ref` that does not resolve inside it, does not compile.
 *   Nothing is fetched.
 * - Validation collects every error, each as `<path> <message>` (`/age must be integer`).
 *
 * No service and no I/O beyond loading Ajv itself, which happens on the first compile (a process that
 * never sees a Structured Output never pays for it). Compiling generates code (Ajv's `new Function`),
 * so a compiled validator is kept for the Step, not rebuilt per call.
 */

import type { ErrorObject, ValidateFunction } from "ajv"
import { Effect, Either } from "effect"
import { Traced } from "../observability/traced.js"

/** A compiled schema: `validate` answers the errors of a value, none when it is valid. */
export interface Validator {
  readonly validate: (value: unknown) => ReadonlyArray<string>
}

const draft2020 = /^https?:\/\/json-schema\.org\/draft\/2020-12\/schema#?$/
const draft07 = /^https?:\/\/json-schema\.org\/draft-0[67]\/schema#?$/

const options = { strict: false, allErrors: true, logger: false, validateFormats: false } as const

/** The text of one Ajv error: where in the value, and what is wrong there. */
const describe = (error: ErrorObject): string => {
  const at = error.instancePath === "" ? "(root)" : error.instancePath
  const extra =
    error.keyword === "additionalProperties" && "additionalProperty" in error.params
      ? ` (${String(error.params.additionalProperty)})`
      : ""
  return `${at} ${error.message ?? error.keyword}${extra}`
}

/** Ajv's two dialects, loaded once per process on first use. */
let loaded: Promise<readonly [typeof import("ajv").Ajv, typeof import("ajv/dist/2020.js").Ajv2020]> | undefined
const ajv = () =>
  Effect.promise(
    () => (loaded ??= Promise.all([import("ajv"), import("ajv/dist/2020.js")]).then(([a, b]) => [a.Ajv, b.Ajv2020]))
  )

/**
 * Compiles `schema`: a Validator, or the reason it cannot be used (for people; admission puts it in
 * its 400). Never fails.
 */
export const compile = Traced.fn("JsonSchemaValidator.compile")(function* (
  schema: Readonly<Record<string, unknown>>
): Effect.fn.Return<Either.Either<Validator, string>> {
  if (schema.type !== "object") {
    return Either.left('the schema\'s root must describe an object (`"type": "object"`)')
  }
  const dialect = schema.$schema
  if (dialect !== undefined && (typeof dialect !== "string" || !(draft2020.test(dialect) || draft07.test(dialect)))) {
    return Either.left(`unsupported $schema ${JSON.stringify(dialect)}: use draft-07 or draft 2020-12`)
  }
  const [Ajv, Ajv2020] = yield* ajv()
  const instance = typeof dialect === "string" && draft2020.test(dialect) ? new Ajv2020(options) : new Ajv(options)
  let compiled: ValidateFunction
  try {
    compiled = instance.compile(schema)
  } catch (error) {
    return Either.left(error instanceof Error ? error.message : String(error))
  }
  return Either.right({
    validate: (value: unknown) => (compiled(value) ? [] : (compiled.errors ?? []).map(describe))
  })
})
