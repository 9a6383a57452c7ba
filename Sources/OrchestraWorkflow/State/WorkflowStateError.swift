import OrchestraDurable

/// Why a `--state` file cannot be used: every message names the file and what is wrong with it.
package struct WorkflowStateError: Error, Sendable, CustomStringConvertible {
    /// The kind of problem.
    package struct Code: Hashable, Sendable, CustomStringConvertible {
        package let description: String
        private init(_ description: String) { self.description = description }

        /// Not a SQLite database, or a damaged one.
        package static let notAStateFile = Code("notAStateFile")
        /// A SQLite database of another program, or another kind of Orchestra file.
        package static let foreignFile = Code("foreignFile")
        /// Written by a newer version of Orchestra.
        package static let newerSchema = Code("newerSchema")
        /// Written by a run of another workflow file (its content hash differs).
        package static let differentWorkflow = Code("differentWorkflow")
        /// A copy taken while a run was using the file (without its `-wal`): what that run did
        /// after the copy is not in it.
        package static let behindItsRun = Code("behindItsRun")
        /// Another `orchestra` process is running with this state file.
        package static let inUse = Code("inUse")
        /// No state file at the path (for `orchestra status`).
        package static let missing = Code("missing")
        /// SQLite failed to read or write it (a full disk, no permission).
        package static let storeFailed = Code("storeFailed")
    }

    package let code: Code
    package let message: String

    package init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    /// The store layer's error, with the matching code.
    init(_ error: DurableError) {
        let code: Code =
            switch error.code {
            case .notADatabase: .notAStateFile
            case .foreignDatabase: .foreignFile
            case .schemaFromNewerVersion: .newerSchema
            default: .storeFailed
            }
        self.init(code, error.message)
    }

    package var description: String { message }
}
