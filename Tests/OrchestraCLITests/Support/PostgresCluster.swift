import Foundation
import Testing

/// The throwaway PostgreSQL clusters of `Scripts/postgres.sh`.
///
/// The tests share one cluster (`ORCHESTRA_POSTGRES_URL`). A test that restarts PostgreSQL
/// starts a cluster of its own for it (``withOwnCluster(_:)``): a restart of the shared one
/// refused the connections of every other test's processes starting at that moment (a worker
/// of another test exited "cannot be reached", once).
struct PostgresCluster: Sendable {
    /// The shared cluster's folder (`ORCHESTRA_POSTGRES_DIR`), when the tests have a cluster of
    /// their own (then `Scripts/postgres.sh` can start more).
    static let directory = ProcessInfo.processInfo.environment["ORCHESTRA_POSTGRES_DIR"]

    /// The trait of a suite that starts clusters of its own: enabled when the tests have a
    /// cluster of their own (then `Scripts/postgres.sh` can start more).
    static var ownClusters: ConditionTrait {
        .enabled(
            if: ProcessInfo.processInfo.environment["ORCHESTRA_POSTGRES_URL"] != nil && directory != nil,
            "no PostgreSQL cluster of the tests' own: eval \"$(Scripts/postgres.sh start)\" sets ORCHESTRA_POSTGRES_URL and ORCHESTRA_POSTGRES_DIR"
        )
    }

    /// `postgres://…` of this cluster.
    let url: String
    /// Its folder.
    let folder: String

    /// Runs `body` with a new cluster, stopped and removed afterwards, whether `body` throws
    /// or not; `maxConnections` sets its server's `max_connections` (200 by default).
    static func withOwnCluster<T>(
        maxConnections: Int? = nil, tls: (certificate: String, key: String)? = nil,
        _ body: (PostgresCluster) async throws -> T
    ) async throws -> T {
        var environment: [String: String] = [:]
        if let maxConnections { environment["ORCHESTRA_POSTGRES_MAX_CONNECTIONS"] = "\(maxConnections)" }
        if let tls {
            environment["ORCHESTRA_POSTGRES_TLS_CERT"] = tls.certificate
            environment["ORCHESTRA_POSTGRES_TLS_KEY"] = tls.key
        }
        let (status, output, errors) = try await script("start", environment: environment)
        let exports = Dictionary(
            output.split(separator: "\n").compactMap { line -> (String, String)? in
                guard line.hasPrefix("export "), let equals = line.firstIndex(of: "=") else { return nil }
                return (
                    String(line[line.index(line.startIndex, offsetBy: 7)..<equals]),
                    String(line[line.index(after: equals)...])
                )
            },
            uniquingKeysWith: { _, last in last })
        guard status == 0, let url = exports["ORCHESTRA_POSTGRES_URL"], let folder = exports["ORCHESTRA_POSTGRES_DIR"]
        else {
            throw ClusterError(
                description: "Scripts/postgres.sh start: status \(String(describing: status)): \(errors)")
        }
        let cluster = PostgresCluster(url: url, folder: folder)
        do {
            let result = try await body(cluster)
            _ = try await script("stop", environment: ["ORCHESTRA_POSTGRES_DIR": folder])
            return result
        } catch {
            _ = try? await script("stop", environment: ["ORCHESTRA_POSTGRES_DIR": folder])
            throw error
        }
    }

    /// Restarts the cluster in immediate mode (like a crash) with `Scripts/postgres.sh restart`,
    /// and returns the script's exit status (`nil` if it did not end within 2 minutes) and its
    /// standard error.
    func restart() async throws -> (status: Int32?, errors: String) {
        let (status, _, errors) = try await Self.script("restart", environment: ["ORCHESTRA_POSTGRES_DIR": folder])
        return (status, errors)
    }

    /// Stops the server in immediate mode (like a crash), keeping the cluster for ``resume()``;
    /// returns the script's exit status and its standard error.
    func halt() async throws -> (status: Int32?, errors: String) {
        let (status, _, errors) = try await Self.script("halt", environment: ["ORCHESTRA_POSTGRES_DIR": folder])
        return (status, errors)
    }

    /// Starts the server of a halted cluster again.
    func resume() async throws -> (status: Int32?, errors: String) {
        let (status, _, errors) = try await Self.script("resume", environment: ["ORCHESTRA_POSTGRES_DIR": folder])
        return (status, errors)
    }

    /// Waits, up to `limit` of real time, until the server takes no more connections: a
    /// `psql` that connects (and leaves at once) says it does not yet, one the server refuses
    /// with "too many clients" says it is full. Returns `nil` once it is full, otherwise what
    /// the last try saw (the connections in use, by application).
    ///
    /// A process's pool opens its connections as it needs them: a coordinator that was told
    /// it may open 2 holds 2 only once it has worked a little, later on a loaded machine.
    func waitUntilFull(limit: Duration = .seconds(60)) async throws -> String? {
        let clock = ContinuousClock()
        let deadline = clock.now.advanced(by: limit)
        var seen = ""
        while clock.now < deadline {
            let child = try ChildProcess(
                executable: URL(fileURLWithPath: "/bin/sh"),
                arguments: [
                    "-c", "exec psql \"$0\" -Atc \"$1\"", url,
                    "select coalesce(nullif(application_name, ''), backend_type) || ' ' || count(*) from pg_stat_activity group by 1 order by 1",
                ],
                environment: ProcessInfo.processInfo.environment)
            let status = await child.exitStatus(within: .seconds(30))
            let output = await child.standardOutput.all()
            let errors = await child.standardError.all()
            if errors.contains("too many clients") { return nil }
            seen = "psql: status \(status.map(String.init) ?? "none"): \(output)\(errors)"
            // Not a wait for the tested code: a poll of the server, bounded by `limit`.
            try await Task.sleep(for: .milliseconds(200))
        }
        return seen
    }

    struct ClusterError: Error, CustomStringConvertible {
        let description: String
    }

    /// Runs `Scripts/postgres.sh command` with `environment` over this process's, for at most
    /// 2 minutes.
    private static func script(
        _ command: String, environment: [String: String]
    ) async throws -> (status: Int32?, output: String, errors: String) {
        let child = try ChildProcess(
            executable: URL(fileURLWithPath: "/bin/sh"),
            arguments: [
                "-c", "exec \"$0\" \"$1\"", OrchestraExecutable.packageRoot.path + "/Scripts/postgres.sh", command,
            ],
            environment: ProcessInfo.processInfo.environment.merging(environment) { _, new in new })
        let status = await child.exitStatus(within: .seconds(120))
        return (status, await child.standardOutput.all(), await child.standardError.all())
    }
}
