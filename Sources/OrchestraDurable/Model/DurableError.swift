/// Why a durable run, its store or one of its jobs could not do what was asked. Every message
/// names the run, the job, the file or the value involved.
///
/// ```swift
/// catch let error as DurableError where error.code == .schemaFromNewerVersion {
///     print(error)  // the store at /data/runs.sqlite has schema version 3; this version knows 1
/// }
/// ```
public struct DurableError: Error, Sendable, CustomStringConvertible {
    /// The kind of problem, comparable with `==`; more codes may be added.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        /// The code's name, as messages show it.
        public let description: String
        private init(_ description: String) { self.description = description }

        /// The graph cannot run as described: a duplicate id, an unknown dependency, a cycle, an
        /// option out of range. Nothing was stored.
        public static let invalidGraph = Code("invalidGraph")
        /// A run with this id exists with different jobs: submitting the same id again is
        /// idempotent only for the same graph.
        public static let runIDInUse = Code("runIDInUse")
        /// No run has this id.
        public static let unknownRun = Code("unknownRun")
        /// Jobs were appended to a run that is not open for them: one submitted whole, closed,
        /// or ended.
        public static let runClosed = Code("runClosed")
        /// There is no store where one was to be read (a PostgreSQL schema nothing was
        /// submitted to).
        public static let noStore = Code("noStore")
        /// The run has no job with this id.
        public static let unknownJob = Code("unknownJob")
        /// A stored job's kind has no handler on this queue.
        public static let unknownJobKind = Code("unknownJobKind")
        /// The file is not a SQLite database (or is damaged).
        public static let notADatabase = Code("notADatabase")
        /// The file is a SQLite database, but not one of Orchestra's.
        public static let foreignDatabase = Code("foreignDatabase")
        /// The store was written by a newer version of Orchestra.
        public static let schemaFromNewerVersion = Code("schemaFromNewerVersion")
        /// A job's output could not be read back as the type asked for, or its input as its
        /// handler's.
        public static let typeMismatch = Code("typeMismatch")
        /// The database reported an error.
        public static let storeFailed = Code("storeFailed")
        /// The database server cannot be reached, or refused the connection (a wrong URL, user
        /// name, password or database name).
        public static let connectionFailed = Code("connectionFailed")
        /// The database server could not be reached for as long as the caller was willing to
        /// wait: it is down, starting, or takes no more connections. Unlike
        /// ``connectionFailed`` for credentials, trying again later may work.
        public static let storeUnreachable = Code("storeUnreachable")
    }

    /// The kind of problem.
    public let code: Code
    /// What went wrong, naming what was involved.
    public let message: String
    /// The error behind this one (the database's, the decoder's), if any.
    public let underlying: (any Error)?

    /// An error with `code` and `message`.
    public init(code: Code, message: String, underlying: (any Error)? = nil) {
        self.code = code
        self.message = message
        self.underlying = underlying
    }

    public var description: String { message }

    /// The error of every store for a run id submitted again with another graph.
    package static func runIDInUse(_ runID: String, store location: String) -> DurableError {
        DurableError(
            code: .runIDInUse,
            message:
                "the store at \(location) has a run '\(runID)' with other jobs; submitting an id again is idempotent only for the same graph"
        )
    }

    /// The error of every store for a run id it has no run under.
    package static func unknownRun(_ runID: String, store location: String) -> DurableError {
        DurableError(code: .unknownRun, message: "the store at \(location) has no run '\(runID)'")
    }

    /// The error of every store for jobs appended to a run that is not open.
    package static func runClosed(_ runID: String, state: String, store location: String) -> DurableError {
        DurableError(
            code: .runClosed,
            message:
                state == DurableRunState.running.rawValue
                ? "run '\(runID)' in the store at \(location) is not open for more jobs (it was submitted whole, or closed)"
                : "run '\(runID)' in the store at \(location) has ended (\(state)); no job can be added to it"
        )
    }

    /// The error of every store for an appended job whose id the run has with another kind or
    /// input.
    package static func jobIDInUse(_ jobID: String, run runID: String, store location: String) -> DurableError {
        DurableError(
            code: .runIDInUse,
            message:
                "run '\(runID)' in the store at \(location) has a job '\(jobID)' of another kind or input; appending a job again is idempotent only for the same job"
        )
    }

    /// The error of every store for an appended job that uses a resource its run has no limit
    /// or rate for.
    package static func unknownResource(_ name: String, job jobID: String, run runID: String) -> DurableError {
        DurableError(
            code: .invalidGraph,
            message:
                "job '\(jobID)' uses the resource '\(name)', which run '\(runID)' has no limit or rate for (resourceLimits or resourceRates when it was opened)"
        )
    }
}
