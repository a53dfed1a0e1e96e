export * as Api from "./api.js"

import { HttpApi, OpenApi } from "@effect/platform"
import { AgentGroup } from "./agent.js"
import { ApiDocumentation } from "./api-documentation.js"
import { CommandGroup } from "./command.js"
import { CredentialGroup } from "./credential.js"
import { InvalidRequestError } from "./errors.js"
import { EventGroup } from "./event.js"
import { FileSystemGroup } from "./fs.js"
import { HealthGroup } from "./health.js"
import { InstructionGroup } from "./instructions.js"
import { IntegrationGroup } from "./integration.js"
import { LocationGroup } from "./location.js"
import { McpGroup } from "./mcp.js"
import { Authorization } from "./middleware.js"
import { ModelGroup } from "./model.js"
import { PermissionGroup } from "./permission.js"
import { ProviderGroup } from "./provider.js"
import { PtyGroup } from "./pty.js"
import { QuestionGroup } from "./question.js"
import { ReferenceGroup } from "./reference.js"
import { SessionGroup } from "./session.js"
import { SkillGroup } from "./skill.js"

/**
 * Every undecodable request is reported as `InvalidRequestError` (400) on this API, so the
 * framework's default `HttpApiDecodeError` is replaced as the API-wide error before any group is
 * added. The server's error middleware performs the same translation at run time.
 */
const base = (() => {
  const api = HttpApi.make("opencode")
  return Object.assign(Object.create(Object.getPrototypeOf(api)), api, {
    errorSchema: InvalidRequestError
  }) as HttpApi.HttpApi<"opencode", never, typeof InvalidRequestError.Type>
})()

/** The OpenCode V2 HTTP API: every group, the Authorization middleware on every route. */
export class OpenCodeApi extends base
  .add(HealthGroup.group)
  .add(LocationGroup.group)
  .add(SessionGroup.group)
  .add(InstructionGroup.group)
  .add(EventGroup.group)
  .add(AgentGroup.group)
  .add(ModelGroup.group)
  .add(ProviderGroup.group)
  .add(PermissionGroup.group)
  .add(QuestionGroup.group)
  .add(SkillGroup.group)
  .add(CommandGroup.group)
  .add(ReferenceGroup.group)
  .add(McpGroup.group)
  .add(FileSystemGroup.group)
  .add(IntegrationGroup.group)
  .add(CredentialGroup.group)
  .add(PtyGroup.group)
  .middleware(Authorization)
  .annotate(OpenApi.Title, "OpenCode V2 API")
  .annotate(OpenApi.Version, "1.18.33")
  .annotate(
    OpenApi.Description,
    "The HTTP API of `opencode serve`: durable agent sessions (prompts, their Steps, tools and permissions), their event streams, and the catalogs they run on."
  )
  .annotate(OpenApi.License, { name: "MIT" })
  .annotate(OpenApi.Servers, ApiDocumentation.servers)
  .annotate(OpenApi.Transform, ApiDocumentation.complete) {}

/**
 * The operations this API adds beyond the observed upstream contract. Conformance checks every other
 * operation against the reference; these are checked against its conventions instead.
 */
export const extensionOperations: ReadonlySet<string> = new Set([
  "v2.session.instructions.entries.list",
  "v2.session.instructions.entries.put",
  "v2.session.instructions.entries.remove",
  "v2.mcp.list",
  "v2.session.move",
  "v2.event.token",
  "v2.agent.generate"
])

/**
 * Statuses some reference operations answer here beyond those the observed contract lists, and why.
 * Conformance checks everything else about these operations against the reference.
 * - the revert operations refuse to change a running session (and `clear` / `commit` refuse when
 *   nothing is staged) with a 409 ConflictError, where the contract lists no conflict;
 * - `fs.read` and `fs.list` answer a missing path with a 404 PathNotFoundError.
 */
export const additionalStatuses: Readonly<Record<string, ReadonlyArray<string>>> = {
  "v2.session.revert.stage": ["409"],
  "v2.session.revert.clear": ["409"],
  "v2.session.revert.commit": ["409"],
  // a path that names nothing is a 404 PathNotFoundError, where the contract lists only 400.
  "v2.fs.read": ["404"],
  "v2.fs.list": ["404"]
}
