/**
 * Test utilities for the runtime and its hosts (`@opencode-ai/core/testing`): scripted fake LLMs that
 * speak the real wire protocols over loopback HTTP, or stand in for the LLM client in process; a
 * throwaway PostgreSQL server, and the switch that runs the suites over it (TestDatabase).
 */
export { ChatRequest } from "./chat-request.js"
export { ContextLimitedModel } from "./context-limited-model.js"
export { FreePort } from "./free-port.js"
export { GitFixture } from "./git-fixture.js"
export { LLMScript } from "./llm-script.js"
export { OAuthTestServer } from "./oauth-test-server.js"
export { PostgresServer } from "./postgres-server.js"
export { SampleFiles } from "./sample-files.js"
export { ScriptedLLMServer } from "./scripted-llm-server.js"
export { TestDatabase } from "./test-database.js"
export { TestLLM } from "./test-llm.js"
