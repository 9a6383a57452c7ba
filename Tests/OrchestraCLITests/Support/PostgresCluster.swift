import Foundation

/// The throwaway PostgreSQL of `Scripts/postgres.sh` the tests run against.
enum PostgresCluster {
    /// Its cluster folder (`ORCHESTRA_POSTGRES_DIR`), when the tests have one of their own.
    static let directory = ProcessInfo.processInfo.environment["ORCHESTRA_POSTGRES_DIR"]

    /// Restarts it in immediate mode (like a crash) with `Scripts/postgres.sh restart`, and
    /// returns the script's exit status (`nil` if it did not end within 2 minutes) and its
    /// standard error.
    static func restart() async throws -> (status: Int32?, errors: String) {
        let restart = try ChildProcess(
            executable: URL(fileURLWithPath: "/bin/sh"),
            arguments: ["-c", "exec \"$0\" restart", OrchestraExecutable.packageRoot.path + "/Scripts/postgres.sh"],
            environment: ProcessInfo.processInfo.environment)
        let status = await restart.exitStatus(within: .seconds(120))
        return (status, await restart.standardError.all())
    }
}
