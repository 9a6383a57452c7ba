import ArgumentParser

/// The flags of `orchestra run` that choose how it runs, as given on the command line.
struct RunFlags: Sendable, Equatable {
    var state: String?
    var schema: String?
    var runID: String?
    var data: String?
    var force = false
    var resendUncertain = false
    var parallel = 1
    var trace: String?
    var cookieJar: String?
    var waitForStore: Int?
}

/// How `orchestra run` runs a workflow, chosen from its flags: once (in memory, or resumable with
/// a `--state` file), once per row of `--data`, or once with its requests sent by the workers of a
/// PostgreSQL store (`--state postgres://…`). Each mode is a type that checks the flags it takes
/// and refuses, naming itself, the flags of the others; ``init(_:)`` picks the mode and lets it
/// check.
enum RunMode: Sendable, Equatable {
    /// Once, in memory or with the `--state` file given.
    case once(stateFile: String?)
    /// Once per row of `--data`, `--parallel` rows at a time.
    case rows
    /// Once, its requests handed to the workers of the PostgreSQL store at `url`.
    case store(url: String)

    /// The mode `flags` ask for.
    ///
    /// - Throws: `ValidationError` naming the first flag the mode does not take, or a bad value.
    init(_ flags: RunFlags) throws {
        guard flags.parallel >= 1 else {
            throw ValidationError("--parallel must be at least 1, got \(flags.parallel)")
        }
        if let url = flags.state, StoreStatus.isPostgresURL(url) {
            try StoreRunFlags.check(flags)
            self = .store(url: url)
        } else if flags.data != nil {
            try DataRunFlags.check(flags)
            self = .rows
        } else {
            try SingleRunFlags.check(flags)
            self = .once(stateFile: flags.state)
        }
    }
}

/// The flags of a run with `--state postgres://…`: `--schema`, `--run-id`, `--resend-uncertain`
/// and `--force` (with `--run-id`); no `--data` or `--parallel`.
enum StoreRunFlags {
    static func check(_ flags: RunFlags) throws {
        if flags.force, flags.runID == nil {
            throw ValidationError(
                "--force goes on with a run opened by another version of the workflow file: give its --run-id")
        }
        if flags.data != nil {
            throw ValidationError("--state postgres://… runs the workflow once; it does not take --data")
        }
        if flags.parallel != 1 {
            throw ValidationError("--parallel sets how many --data rows run at once: give --data")
        }
        if flags.runID?.isEmpty == true { throw ValidationError("--run-id needs an id") }
        if let wait = flags.waitForStore, wait < 0 {
            throw ValidationError("--wait-for-store must be 0 or more seconds, got \(wait)")
        }
        if flags.resendUncertain, flags.runID == nil {
            throw ValidationError("--resend-uncertain goes on with a run: give its --run-id")
        }
    }
}

/// The flags of a run of `--data` rows: `--parallel`; no `--state` (nor `--force`,
/// `--resend-uncertain`), `--schema`, `--run-id`, `--trace` or `--cookie-jar`.
enum DataRunFlags {
    static func check(_ flags: RunFlags) throws {
        try SingleRunFlags.checkNoStore(flags)
        if flags.state != nil {
            throw ValidationError("--state records one run of the workflow; it does not take a --data run")
        }
        try SingleRunFlags.checkNoStateFile(flags)
        if flags.trace != nil {
            throw ValidationError("--trace does not take a --data run; use --report-html for its timeline")
        }
        if flags.cookieJar != nil {
            throw ValidationError("--cookie-jar does not take a --data run: each row has its own cookie jar")
        }
    }
}

/// The flags of one run, in memory or with a `--state` file: `--force` and
/// `--resend-uncertain` with `--state`; no `--schema`, `--run-id` or `--parallel`.
enum SingleRunFlags {
    static func check(_ flags: RunFlags) throws {
        try checkNoStore(flags)
        if flags.state?.isEmpty == true { throw ValidationError("--state needs a file name") }
        if flags.state == nil { try checkNoStateFile(flags) }
        if flags.parallel != 1 {
            throw ValidationError("--parallel sets how many --data rows run at once: give --data")
        }
    }

    /// `--schema`, `--run-id` and `--wait-for-store` belong to a PostgreSQL store.
    static func checkNoStore(_ flags: RunFlags) throws {
        if flags.schema != nil || flags.runID != nil {
            throw ValidationError("--schema and --run-id apply to --state postgres://… (a PostgreSQL store)")
        }
        if flags.waitForStore != nil {
            throw ValidationError("--wait-for-store applies to --state postgres://… (a PostgreSQL store)")
        }
    }

    /// `--force` and `--resend-uncertain` belong to a `--state` file.
    static func checkNoStateFile(_ flags: RunFlags) throws {
        if flags.force { throw ValidationError("--force lets --state use another workflow's state file: give --state") }
        if flags.resendUncertain { throw ValidationError("--resend-uncertain resumes a --state file: give --state") }
    }
}
