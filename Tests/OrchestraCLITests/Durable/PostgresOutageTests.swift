import Foundation
import OrchestraDemoServer
import OrchestraTestKit
import TestSupport
import Testing

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// `orchestra worker`, `orchestra run --state postgres://…` and `orchestra status` when the
/// database cannot be reached: down at start, or down for a while in the middle of a run. A
/// worker waits for it (as long as it takes, by default), a coordinator for `--wait-for-store`
/// seconds, and both say on stderr when it stops answering and when it answers again; a store
/// that could not be reached exits 3, one that refuses the credentials 2. Before, every one of
/// them exited 2 at once, as for a wrong password, and an outage was silent.
///
/// Each test stops and starts a PostgreSQL cluster of its own.
@Suite(
    "PostgreSQL down at start and in the middle of a run",
    .serialized,
    PostgresCluster.ownClusters,
    .timeLimit(.minutes(5)), .takesTurns)
struct PostgresOutageTests {
    @Test(
        "a worker waits for a database that is down at start, a coordinator for --wait-for-store, and each says so",
        .enabled(if: ExitTests.areEnabled))
    func aDatabaseDownAtStartIsWaitedFor() async throws {
        try await PostgresCluster.withOwnCluster { cluster in
            try await withDemoServer { server in
                let halted = try await cluster.halt()
                try #require(halted.status == 0, "\(halted.errors)")
                let file = try DistributedRunTests.workflow(base: server.baseURL, count: 20, hostLimit: 4, latency: 1)
                let worker = try OrchestraExecutable.start([
                    "worker", "--state", cluster.url, "--schema", "outage", "--limit", "4",
                ])
                let waiting = await worker.child.standardError.wait(
                    for: "trying again until it answers", limit: .seconds(60))
                #expect(waiting, "the worker did not say it waits: \(worker.child.standardError.text)")

                // A coordinator waits only --wait-for-store seconds, then exits 3 ("try again
                // later"); status does not wait.
                let coordinator = try await OrchestraExecutable.run(
                    ["run", file, "--state", cluster.url, "--schema", "outage", "--wait-for-store", "1"],
                    limit: .seconds(60))
                #expect(coordinator.status == 3, "\(coordinator)")
                #expect(coordinator.stderr.contains("cannot be reached"), "\(coordinator)")
                #expect(coordinator.stderr.contains("(waited "), "\(coordinator)")
                // In words, not SwiftNIO's error dumped (`SingleConnectionFailure(target: …`).
                #expect(coordinator.stderr.contains("cannot be reached: connection refused"), "\(coordinator)")
                #expect(!coordinator.stderr.contains("Failure("), "\(coordinator)")
                let status = try await OrchestraExecutable.run(
                    ["status", "--state", cluster.url, "--schema", "outage"], limit: .seconds(60))
                #expect(status.status == 3, "\(status)")
                #expect(server.requestCount == 0)

                let resumed = try await cluster.resume()
                try #require(resumed.status == 0, "\(resumed.errors)")
                let back = await worker.child.standardError.wait(for: "the store answers again", limit: .seconds(60))
                #expect(back, "the worker did not say the store is back: \(worker.child.standardError.text)")
                let run = try await OrchestraExecutable.run(
                    ["run", file, "--state", cluster.url, "--schema", "outage"], limit: .seconds(120))
                #expect(run.status == 0, "\(run)")
                #expect(run.stdout.contains("20 requests sent, 20 succeeded"), "\(run)")

                worker.child.send(SIGTERM)
                let stopped = await worker.finish(limit: .seconds(60))
                #expect(stopped.status == 0, "\(stopped)")
                #expect(!stopped.stderr.contains("orchestra-test"), "the password was printed")
            }
        }
    }

    @Test("a wrong password is refused at once with exit 2, not waited for")
    func aWrongPasswordIsNotWaitedFor() async throws {
        guard var components = URLComponents(string: ProcessInfo.processInfo.environment["ORCHESTRA_POSTGRES_URL"]!)
        else { return }
        components.password = "not-the-password"
        let wrong = try #require(components.string)
        let worker = try await OrchestraExecutable.run(["worker", "--state", wrong], limit: .seconds(60))
        #expect(worker.status == 2, "\(worker)")
        #expect(worker.stderr.contains("password authentication failed"), "\(worker)")
        #expect(!worker.stderr.contains("trying again"), "\(worker)")
        #expect(!worker.stderr.contains("not-the-password"), "the password was printed")
    }

    @Test("a URL without its password takes it from PGPASSWORD or the password file, and says when there is none")
    func aPasswordOffTheCommandLine() async throws {
        guard var components = URLComponents(string: ProcessInfo.processInfo.environment["ORCHESTRA_POSTGRES_URL"]!),
            let password = components.password
        else { return }
        components.password = nil
        let bare = try #require(components.string)
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("pgpass-\(UUID())")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let file = folder.appendingPathComponent("pass").path
        try "*:*:*:\(components.user ?? ""):\(password)\n".write(toFile: file, atomically: true, encoding: .utf8)
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: file)
        let missing = folder.appendingPathComponent("none").path

        let none = try await OrchestraExecutable.run(
            ["status", "--state", bare], environment: ["PGPASSWORD": "", "PGPASSFILE": missing], limit: .seconds(60))
        #expect(none.status == 2, "\(none)")
        #expect(none.stderr.contains("it asks for a password, and none was given"), "\(none)")
        for environment in [["PGPASSWORD": password, "PGPASSFILE": missing], ["PGPASSWORD": "", "PGPASSFILE": file]] {
            let status = try await OrchestraExecutable.run(
                ["status", "--state", bare, "--schema", "pgpass_\(UInt32.random(in: 0...UInt32.max))"],
                environment: environment, limit: .seconds(60))
            // Connected and logged in: what it says is that the schema holds no store.
            #expect(status.stderr.contains("there is no Orchestra store in schema"), "\(environment): \(status)")
            #expect(!status.stderr.contains("password"), "\(status)")
        }
    }

    @Test(
        "an outage in the middle of a run is said when it begins and when it ends, and the run succeeds",
        .enabled(if: ExitTests.areEnabled))
    func anOutageMidRunIsSaid() async throws {
        try await PostgresCluster.withOwnCluster { cluster in
            try await withDemoServer { server in
                let file = try DistributedRunTests.workflow(base: server.baseURL, count: 300, hostLimit: 4, latency: 20)
                let worker = try OrchestraExecutable.start([
                    "worker", "--state", cluster.url, "--schema", "outage", "--limit", "4",
                ])
                let coordinator = try OrchestraExecutable.start([
                    "run", file, "--state", cluster.url, "--schema", "outage", "--no-color",
                ])
                try await withHangGuard(.seconds(120)) { try await server.requests(reaching: 40) }
                let halted = try await cluster.halt()
                try #require(halted.status == 0, "\(halted.errors)")
                let down = await worker.child.standardError.wait(
                    for: "trying again until it answers", limit: .seconds(60))
                #expect(down, "the worker did not say the store is down: \(worker.child.standardError.text)")
                let resumed = try await cluster.resume()
                try #require(resumed.status == 0, "\(resumed.errors)")
                let back = await worker.child.standardError.wait(for: "the store answers again", limit: .seconds(120))
                #expect(back, "the worker did not say the store is back: \(worker.child.standardError.text)")

                let run = await coordinator.finish(limit: .seconds(240))
                #expect(run.status == 0, "\(run)")
                #expect(run.stdout.contains("300 requests sent, 300 succeeded"), "\(run)")
                // The coordinator, waiting for outcomes, says it too.
                #expect(run.stderr.contains("cannot be reached"), "\(run)")
                #expect(run.stderr.contains("the store answers again"), "\(run)")
                worker.child.send(SIGTERM)
                let stopped = await worker.finish(limit: .seconds(60))
                #expect(stopped.status == 0, "\(stopped)")
                // In words: a connection the server closed as it shut down was once told as
                // PostgresNIO's generic description of every error.
                for said in [run.stderr, stopped.stderr] {
                    #expect(!said.contains("PSQLError"), "\(said)")
                    #expect(!said.contains("Generic description"), "\(said)")
                }
            }
        }
    }
}
