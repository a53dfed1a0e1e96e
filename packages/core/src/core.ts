export * as Core from "./core.js"

import * as os from "node:os"
import * as nodePath from "node:path"
import * as NodeCommandExecutor from "@effect/platform-node/NodeCommandExecutor"
import * as NodeFileSystem from "@effect/platform-node/NodeFileSystem"
import * as NodePath from "@effect/platform-node/NodePath"
import { SqlClient } from "@effect/sql"
import { Context, Effect, Either, Layer, Option } from "effect"
import * as Assembly from "./assembly.js"
import * as Commands from "./command/commands.js"
import * as SessionCommand from "./command/session-command.js"
import * as Compaction from "./compaction/compaction.js"
import * as Config from "./config/config.js"
import type { ConfigError } from "./config/config-error.js"
import * as ConfigErrors from "./config/config-error.js"
import * as EnvFlag from "./config/env-flag.js"
import * as ModelDatabase from "./config/model-database.js"
import * as Paths from "./config/paths.js"
import * as CredentialStore from "./credential/credential-store.js"
import * as Integrations from "./credential/integrations.js"
import * as OAuthAttempts from "./credential/oauth-attempts.js"
import * as EventLog from "./event/event-log.js"
import * as LiveBus from "./event/live-bus.js"
import * as LiveRelay from "./event/live-relay.js"
import * as LocationFiles from "./fs/location-files.js"
import * as SessionInput from "./input/session-input.js"
import * as InstructionCheckpoint from "./instructions/instruction-checkpoint.js"
import * as InstructionDiscovery from "./instructions/instruction-discovery.js"
import * as InstructionEntries from "./instructions/instruction-entries.js"
import * as NestedInstructions from "./instructions/nested-instructions.js"
import * as SessionInstructions from "./instructions/session-instructions.js"
import { LazyHttpClient } from "./llm/lazy-http-client.js"
import type * as LLMClient from "./llm/llm-client.js"
import * as Provider from "./llm/provider.js"
import type * as Retry from "./llm/retry.js"
import * as Locations from "./location/locations.js"
import * as McpServers from "./mcp/mcp-servers.js"
import * as PermissionRequests from "./permission/permission-requests.js"
import * as SessionReminders from "./prompt/session-reminders.js"
import * as Ptys from "./pty/ptys.js"
import * as QuestionRequests from "./question/question-requests.js"
import * as References from "./reference/references.js"
import * as ModelContext from "./runner/model-context.js"
import * as Recovery from "./runner/recovery.js"
import * as RunnerOptions from "./runner/runner-options.js"
import * as SafeStepBoundary from "./runner/safe-step-boundary.js"
import * as SessionDrain from "./runner/session-drain.js"
import * as SessionLeases from "./runner/session-leases.js"
import * as SessionPlacement from "./runner/session-placement.js"
import * as SessionRunner from "./runner/session-runner.js"
import * as StepRunner from "./runner/step-runner.js"
import * as StepSelection from "./runner/step-selection.js"
import * as ToolSettlement from "./runner/tool-settlement.js"
import * as KnownSessions from "./session/known-sessions.js"
import * as PlanFile from "./session/plan-file.js"
import * as SessionDelete from "./session/session-delete.js"
import * as SessionEvents from "./session/session-events.js"
import * as SessionHistory from "./session/session-history.js"
import * as SessionMove from "./session/session-move.js"
import * as SessionRevert from "./session/session-revert.js"
import * as SessionSelection from "./session/session-selection.js"
import * as SessionTitle from "./session/session-title.js"
import * as Sessions from "./session/sessions.js"
import * as SkillTool from "./skill/skill-tool.js"
import * as Skills from "./skill/skills.js"
import * as Snapshots from "./snapshot/snapshots.js"
import * as Storage from "./storage/storage.js"
import * as AgentGeneration from "./subagent/agent-generation.js"
import * as TaskTool from "./subagent/task-tool.js"
import * as BuiltinTools from "./tool/builtin/builtin-tools.js"
import * as PlanTools from "./tool/builtin/plan-tools.js"
import * as QuestionTool from "./tool/builtin/question-tool.js"
import * as ManagedOutput from "./tool/managed-output.js"
import * as ModelToolOutput from "./tool/model-tool-output.js"
import * as ToolRegistry from "./tool/tool-registry.js"

export interface Options {
  /** The SQLite file holding every session; created (with its directory) when missing. */
  readonly databaseFile: string
  /**
   * Where sessions are stored instead of `databaseFile`. Default (`Storage.select`): a PostgreSQL
   * database when `OPENCODE_DATABASE_URL` (in `env`) or the config's `server.database` names one,
   * else the SQLite file `databaseFile`.
   */
  readonly database?: Storage.Selection | undefined
  /** The instance directory: the default Location, and the base of relative directories. */
  readonly directory: string
  /** The global config directory; default `Paths.fromEnv(env, os.homedir()).configDir`. */
  readonly configDir?: string | undefined
  /** The environment the runtime honours (e.g. `OPENCODE_DISABLE_PROJECT_CONFIG`); default `process.env`. */
  readonly env?: Readonly<Record<string, string | undefined>> | undefined
  /** The data directory (agents' managed-output and plan-file rules); default `Paths.fromEnv(env, os.homedir()).dataDir`. */
  readonly dataDir?: string | undefined
  /**
   * The configuration to use instead of reading `opencode.json(c)` (e.g. `Config.layerTest(...)`).
   * Default: `Config.layer` over `directory`, `env`, `configDir` and `dataDir`, with the credentials
   * of `<dataDir>/auth.json` joining its catalog. A given configuration's catalog does not follow the
   * stored credentials (the integrations still store and list them).
   */
  readonly config?: Layer.Layer<Config.Service, ConfigError> | undefined
  /**
   * The LLM client to use instead of the configured providers' real adapters (e.g. `TestLLM.layer`).
   * Default: each request is routed by its provider id to that provider's adapter over undici.
   */
  readonly llm?: Layer.Layer<LLMClient.Service> | undefined
  /** The provider retry policy; default `Retry.defaultPolicy`. */
  readonly retry?: Retry.Policy | undefined
  /**
   * Run Recovery when the layer is built (settle what a crash left running, resume sessions with
   * admitted input). Default true; a secondary process that must not drive sessions passes false.
   */
  readonly recover?: boolean | undefined
  /**
   * Where the model database under the provider catalog comes from (see ModelDatabase): a cache file
   * and a URL to refresh from in the background. Default `{}`: the bundled snapshot only, no cache,
   * no network. A host that should stay current passes `ModelDatabase.fromEnv(env, home)` (the
   * server does). Ignored when `config` is given.
   */
  readonly models?: ModelDatabase.Options | undefined
  /**
   * This host's heartbeat and how long a silent host is taken for live (see SessionLeases); default
   * `SessionLeases.fromEnv(env)`.
   */
  readonly leases?: SessionLeases.Options | undefined
  /**
   * Run this host as a runner of an `@effect/cluster` cluster over the database (see ClusterRunner):
   * sessions are then placed on runners by shard, in place of first-come leases. Every host that
   * shares the database must then be a runner. `false`: never a runner, whatever the environment says
   * (an embedded host). Default `RunnerOptions.fromEnv(env)`: a runner when `OPENCODE_RUNNER_ADDRESS`
   * is set, else none.
   */
  readonly runner?: RunnerOptions.Options | false | undefined
  /**
   * Tools of the host program (e.g. an embedded host's), registered in this instance's Tool Registry
   * for its lifetime, before the runner starts (so a session resumed at startup can call them).
   */
  readonly tools?: ReadonlyArray<ToolRegistry.Tool> | undefined
}

/**
 * Everything a host (the server, the embedded SDK) needs from the runtime: the services a built Core
 * holds, and no other (the platform's, the LLM client and the runner's internals stay inside).
 */
const exported = [
  Sessions.Service,
  EventLog.Service,
  LiveBus.Service,
  LiveRelay.Service,
  Locations.Service,
  LocationFiles.Service,
  InstructionCheckpoint.Service,
  InstructionEntries.Service,
  InstructionDiscovery.Service,
  NestedInstructions.Service,
  SessionInstructions.Service,
  SqlClient.SqlClient,
  Config.Service,
  KnownSessions.Service,
  SessionEvents.Service,
  SessionInput.Service,
  SessionHistory.Service,
  SessionSelection.Service,
  PlanFile.Service,
  ToolRegistry.Service,
  Skills.Service,
  Commands.Service,
  SessionCommand.Service,
  References.Service,
  PermissionRequests.Service,
  QuestionRequests.Service,
  SessionLeases.Service,
  ManagedOutput.Service,
  ModelToolOutput.Service,
  McpServers.Service,
  SessionRunner.Service,
  Snapshots.Service,
  SessionRevert.Service,
  SessionMove.Service,
  SessionDelete.Service,
  // The runner's stages, each usable on its own (hosts drive sessions through SessionRunner).
  Recovery.Service,
  SafeStepBoundary.Service,
  StepSelection.Service,
  ModelContext.Service,
  StepRunner.Service,
  Compaction.Service,
  SessionTitle.Service,
  SessionDrain.Service,
  AgentGeneration.Service,
  CredentialStore.Service,
  Integrations.Service,
  OAuthAttempts.Service,
  Ptys.Service,
  Storage.Selected
] as const

export type Services = Context.Tag.Identifier<(typeof exported)[number]>

/**
 * The runtime over one database file: it resolves once the database is open and migrated. Each
 * call owns its own connection, event bus and caches, so two layers on two files share nothing,
 * even when built with one memo map.
 * Closing the scope it was built in closes the database.
 *
 * The configuration is loaded first, before the database is opened: an invalid `opencode.json(c)`
 * fails the layer with a ConfigError naming the file, line and reason, so a host never starts (or
 * touches its database) with a configuration it cannot honour.
 *
 * The services are built one after another (an Assembly), each over those built before it, and
 * released in the reverse order (the LiveBus and the database last). Composed as one graph of layers
 * they were about 340 memoised nodes, 36,000 runtime operations at every start
 * (`bench/README.md`, "Layers built as an Assembly").
 */
export const layer = (options: Options): Layer.Layer<Services, ConfigError | Storage.DatabaseUnavailable> =>
  Layer.scopedContext(
    Effect.gen(function* () {
      const env = options.env ?? process.env
      const paths = Paths.fromEnv(env, os.homedir())
      const configDir = options.configDir ?? paths.configDir
      const dataDir = options.dataDir ?? paths.dataDir
      const retry = options.retry === undefined ? {} : { retry: options.retry }
      // Its own MemoMap: two Cores share nothing, even built in one graph.
      const assembly = yield* Assembly.make(yield* Layer.makeMemoMap)
      const { add, get } = assembly

      // The platform's services Core uses (file system, paths, child processes); they stay inside.
      // Not `NodeContext.layer`, whose terminal and worker manager nothing here needs.
      yield* add(NodeFileSystem.layer)
      yield* add(NodePath.layer)
      yield* add(NodeCommandExecutor.layer)
      // The log publishes every commit to the instance's LiveBus, which outlives it (built first,
      // closed last).
      yield* add(Layer.scoped(LiveBus.Service, LiveBus.make))
      yield* add(LazyHttpClient.layer)
      // Provider credentials in `<data>/auth.json`; an unreadable file stops startup like an invalid config.
      yield* add(
        CredentialStore.layer({ dataDir }).pipe(
          Layer.catchAll((error) =>
            Layer.fail(ConfigErrors.at({ file: error.file, line: 0, column: 0 }, error.message))
          )
        )
      )
      if (options.config === undefined) {
        // The refresh (if any) runs in Core's scope: closing Core interrupts it.
        yield* add(
          options.models?.url === undefined && options.models?.cacheFile === undefined
            ? ModelDatabase.layerStatic()
            : ModelDatabase.layer(options.models)
        )
        // Stored credentials join the catalog (and a change to them resolves it again).
        yield* add(Config.layer({ directory: options.directory, env, configDir, dataDir }))
      } else {
        yield* add(options.config)
      }
      const loaded = get(Config.Service)
      // The database is chosen once the configuration is loaded (`server.database` may name one).
      if (options.database === undefined) {
        const selection = Storage.select({ env, configured: loaded.server.database, filename: options.databaseFile })
        if (Either.isLeft(selection)) return yield* selection.left
        yield* add(Storage.layer(selection.right))
      } else {
        yield* add(Storage.layer(options.database))
      }
      // This host's leases come before the log: they provide the CommitFence it checks in every
      // commit. With a runner, the cluster's shards place sessions (ShardLeases); else first-come
      // leases do.
      yield* add(
        SessionPlacement.layer({
          leases: options.leases ?? SessionLeases.fromEnv(env),
          runner: options.runner === false ? undefined : (options.runner ?? RunnerOptions.fromEnv(env))
        })
      )
      yield* add(EventLog.layer)
      yield* add(KnownSessions.layer)
      yield* add(SessionEvents.layer)
      yield* add(Sessions.layer)
      yield* add(InstructionCheckpoint.layer)
      yield* add(InstructionEntries.layer)
      yield* add(NestedInstructions.layer({ env }))
      yield* add(SessionInput.layer)
      yield* add(SessionHistory.layer)
      yield* add(SessionSelection.layer)
      // Managed Tool Output Files live in `<data>/tool-output/`; the store sweeps expired ones.
      yield* add(
        ManagedOutput.layer({
          directory: options.dataDir !== undefined ? nodePath.join(options.dataDir, "tool-output") : paths.toolOutputDir
        })
      )
      yield* add(ModelToolOutput.layer)
      // The `instructions` config key's files join the AGENTS.md files (InstructionDiscovery.paths).
      yield* add(InstructionDiscovery.layer({ configDir, env, instructions: loaded.info.instructions }))
      yield* add(SessionInstructions.layer)
      yield* add(Locations.layer({ directory: options.directory }))
      yield* add(LocationFiles.layer())
      // Each session's Plan File (experimental plan mode): in its git worktree, else under `<data>/plans/`.
      yield* add(PlanFile.layer({ dataDir }))
      // File snapshots per project in `<data>/snapshot/<projectID>` (a shadow git repository); the
      // Step runner records them around every Step.
      yield* add(Snapshots.layer({ dataDir }))
      yield* add(Skills.layer({ configDir, env }))
      yield* add(Commands.layer({ configDir, env }))
      yield* add(References.layer({ dataDir, home: os.homedir() }))
      yield* add(PermissionRequests.layer)
      yield* add(QuestionRequests.layer)
      // The PTYs live as long as the Core: closing it kills every one that is left.
      yield* add(Ptys.layer())
      yield* add(ToolRegistry.layer)
      // Connects the configured MCP servers in the background (their tools join this instance's
      // registry); closing the Core closes them.
      yield* add(McpServers.layer({ env, directory: options.directory }))
      // The integrations over the catalog and the credentials, and the OAuth attempts that add them.
      yield* add(OAuthAttempts.layer)
      yield* add(Integrations.layer({ env }))
      yield* add(
        options.llm ??
          // The key is looked up at each request: a stored OAuth token is refreshed when it has expired.
          Provider.layerRouted((providerID) =>
            Effect.gen(function* () {
              const config = yield* Config.Service
              const integrations = yield* Integrations.Service
              const provider = config.provider(providerID)
              if (Option.isNone(provider)) return Option.none()
              const apiKey = yield* integrations.apiKey(providerID)
              return Option.some({
                protocol: provider.value.protocol,
                baseURL: provider.value.baseURL,
                apiKey,
                headers: provider.value.headers,
                dialect: Provider.dialectOf(provider.value.npm)
              })
            })
          )
      )
      // Core's own tools (the skill and question tools, and with experimental plan mode plan_exit
      // and plan_enter), the built-in tools (read, write, edit, apply_patch, bash, glob, grep,
      // todowrite) and the host's `tools`, registered before the runner starts. Read and grep reach
      // this instance's managed tool-output directory without an external_directory ask.
      const experimentalPlanMode = EnvFlag.experimentalPlanMode(env)
      yield* add(SkillTool.layer)
      yield* add(QuestionTool.layer)
      if (experimentalPlanMode) yield* add(PlanTools.layer)
      const nested = get(NestedInstructions.Service)
      yield* add(
        BuiltinTools.layer({
          toolOutputDir: get(ManagedOutput.Service).directory,
          // After a successful read inside the Location, nearby nested AGENTS.md files become
          // pending for the session; the next Safe Step Boundary admits them.
          onRead: (context, target, kind) =>
            Effect.asVoid(nested.note(context.sessionID, context.directory, target, kind))
        })
      )
      yield* Effect.forEach(options.tools ?? [], get(ToolRegistry.Service).register, { discard: true })
      // The runner's stages, each usable on its own (see SessionDrain for their order). Compaction
      // rebaselines from the Instructions the boundary composes; the hidden title agent names new
      // sessions after their first Step.
      yield* add(Recovery.layer)
      yield* add(SafeStepBoundary.layer)
      yield* add(StepSelection.layer)
      yield* add(SessionReminders.layer({ experimentalPlanMode }))
      yield* add(ModelContext.layer)
      yield* add(ToolSettlement.layer)
      yield* add(StepRunner.layer(retry))
      yield* add(Compaction.layer(retry))
      yield* add(SessionTitle.layer(retry))
      yield* add(SessionDrain.layer)
      yield* add(SessionRunner.layer(options.recover === undefined ? {} : { recover: options.recover }))
      // Revert and move change a session only while it does not run, and delete interrupts it
      // first, so they come after the runner. So does the task tool, which runs subagents as child
      // sessions through the runner, and so do custom commands, whose subtasks do the same.
      yield* add(SessionRevert.layer)
      yield* add(SessionMove.layer)
      yield* add(SessionDelete.layer)
      yield* add(TaskTool.layer)
      // The agent-generation request is a side request of its own (no session).
      yield* add(AgentGeneration.layer(retry))
      yield* add(SessionCommand.layer)
      // Live deltas and running sessions shared with the other hosts on a PostgreSQL database.
      yield* add(LiveRelay.layer)
      return Context.pick(...exported)(assembly.context() as Context.Context<Services>)
    })
  )
