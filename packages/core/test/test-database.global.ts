import { TestDatabase } from "../src/testing/test-database.js"

/** Under `OPENCODE_TEST_DATABASE=postgres`, one PostgreSQL server for this project's run (see TestDatabase). */
export default TestDatabase.globalSetup
