// The stores (`withTemporaryStore`, `StoreKind`, `PostgresTestServer`) and `untilCancelled` are
// shared with OrchestraPostgresTests; every file of this target sees them through this import.
@_exported import DurableStoreTestSupport
import Foundation
import OrchestraDurable

let add = JobKind<[Int], Int>("add")
let wait = JobKind<String, String>("wait")

/// A fixed date the manual clock's zero stands for.
let epoch = Date(timeIntervalSince1970: 1_800_000_000)
