import { afterAll } from "vitest"
import { TestDatabase } from "../src/testing/test-database.js"

// Under `OPENCODE_TEST_DATABASE=postgres`: the databases this test file created go with it.
afterAll(() => TestDatabase.dropCreated(), 120_000)
