import { TestDatabase } from "@opencode-ai/core/testing"

/** Under `OPENCODE_TEST_DATABASE=postgres`, one PostgreSQL server for this project's run (see TestDatabase). */
export default TestDatabase.globalSetup
