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

/// `orchestra worker` and `orchestra run --state postgres://…` on a server with fewer
/// connections than the processes would like (`max_connections`), and stopped while their
/// database does not answer. A worker holds 2 connections, a coordinator up to 3; one that
/// finds the server full waits and says so, a coordinator with fewer free than it asks for
/// opens fewer, and SIGTERM ends a worker whatever it waits for. Before, 29 of 30 workers died
/// on a server that took 20 connections, the coordinator failed at once, and a worker stopped
/// during an outage waited two minutes for the store before it ended.
///
/// Each test starts a PostgreSQL cluster of its own.
@Suite(
    "PostgreSQL with too few connections, and workers stopped while it does not answer",
    .serialized,
    PostgresCluster.ownClusters,
    .timeLimit(.minutes(5)), .takesTurns)
struct PostgresConnectionBudgetTests {
    @Test(
        "a worker that finds the server full waits and says so until SIGTERM, a coordinator opens what is free, and the run succeeds",
        .enabled(if: ExitTests.areEnabled))
    func moreProcessesThanTheServerTakes() async throws {
        // 6 connections: two workers (2 each), then a coordinator that asks for 3 and gets 2.
        try await PostgresCluster.withOwnCluster(maxConnections: 6) { cluster in
            try await withDemoServer { server in
                let workers = try (0..<2).map { _ in
                    try OrchestraExecutable.start([
                        "worker", "--state", cluster.url, "--schema", "budget", "--limit", "4",
                    ])
                }
                for worker in workers {
                    let started = await worker.child.standardOutput.wait(
                        for: "sending the requests", limit: .seconds(60))
                    #expect(started, "\(worker.child.standardError.text)")
                }
                // 1.5 s a request, 4 at once: the run lasts about 15 s, so it still holds its
                // connections when the third worker asks (at 1 ms a request, it could end first
                // on a loaded machine, and the third worker then found room and said nothing).
                let file = try DistributedRunTests.workflow(
                    base: server.baseURL, count: 40, hostLimit: 4, latency: 1_500)
                let coordinator = try OrchestraExecutable.start([
                    "run", file, "--state", cluster.url, "--schema", "budget", "--no-color",
                ])
                let narrowed = await coordinator.child.standardError.wait(
                    for: "fewer than 3 connections free", limit: .seconds(60))
                #expect(narrowed, "\(coordinator.child.standardError.text)")

                // The server is full once the coordinator has opened both: a third worker then
                // waits for a connection, and says why. (Asked before the coordinator's pool had
                // opened its second, in a full parallel run, the third found room and said nothing.)
                let notFull = try await cluster.waitUntilFull()
                try #require(notFull == nil, "the server never became full: \(notFull ?? "")")
                let third = try OrchestraExecutable.start([
                    "worker", "--state", cluster.url, "--schema", "budget", "--limit", "4",
                ])
                let full = await third.child.standardError.wait(
                    for: "takes no more connections", limit: .seconds(60))
                #expect(full, "the third worker did not say the server is full: \(third.child.standardError.text)")

                let run = await coordinator.finish(limit: .seconds(120))
                #expect(run.status == 0, "\(run)")
                #expect(run.stdout.contains("40 requests sent, 40 succeeded"), "\(run)")
                #expect(!run.stderr.contains("did not answer"), "\(run)")

                // The coordinator's connections are free again: the third worker starts.
                let started = await third.child.standardOutput.wait(for: "sending the requests", limit: .seconds(60))
                #expect(started, "the third worker never started: \(third.child.standardError.text)")

                // Full again (three workers): a fourth waits, and SIGTERM ends the wait at once.
                let notFullAgain = try await cluster.waitUntilFull()
                try #require(notFullAgain == nil, "the server never became full again: \(notFullAgain ?? "")")
                let fourth = try OrchestraExecutable.start([
                    "worker", "--state", cluster.url, "--schema", "budget", "--limit", "4",
                ])
                let waits = await fourth.child.standardError.wait(for: "takes no more connections", limit: .seconds(60))
                #expect(waits, "\(fourth.child.standardError.text)")
                fourth.child.send(SIGTERM)
                // Not a timing assertion: before, the default action of SIGTERM ended it (status
                // 143, no closing line); a worker that never ends fails at the guard.
                let abandoned = await fourth.finish(limit: .seconds(30))
                #expect(abandoned.status == 0, "\(abandoned)")
                #expect(
                    abandoned.stdout.contains("stopped: before the store answered; no request sent"), "\(abandoned)")

                for worker in workers + [third] {
                    worker.child.send(SIGTERM)
                    let stopped = await worker.finish(limit: .seconds(60))
                    #expect(stopped.status == 0, "a worker died or failed: \(stopped)")
                    #expect(!stopped.stderr.contains("error"), "\(stopped)")
                }
            }
        }
    }

    @Test(
        "SIGTERM ends a worker whose database stopped answering within its grace period and the time to give back",
        .enabled(if: ExitTests.areEnabled))
    func aWorkerStopsDuringAnOutage() async throws {
        try await PostgresCluster.withOwnCluster { cluster in
            try await withDemoServer { server in
                let file = try DistributedRunTests.workflow(base: server.baseURL, count: 300, hostLimit: 4, latency: 20)
                let worker = try OrchestraExecutable.start([
                    "worker", "--state", cluster.url, "--schema", "budget", "--limit", "4", "--grace", "1",
                ])
                let coordinator = try OrchestraExecutable.start([
                    "run", file, "--state", cluster.url, "--schema", "budget", "--no-color",
                ])
                try await withHangGuard(.seconds(120)) { try await server.requests(reaching: 40) }
                let halted = try await cluster.halt()
                try #require(halted.status == 0, "\(halted.errors)")
                let down = await worker.child.standardError.wait(
                    for: "trying again until it answers", limit: .seconds(60))
                #expect(down, "\(worker.child.standardError.text)")

                worker.child.send(SIGTERM)
                // Before, the worker went on trying for the store's two minutes of outage
                // tolerance (and, waiting as long as it takes, forever): the guard fails it.
                let stopped = await worker.finish(limit: .seconds(60))
                #expect(stopped.status == 0, "\(stopped)")
                #expect(stopped.stderr.contains("the store did not answer within 16 s of the stop"), "\(stopped)")
                #expect(stopped.stdout.contains("stopped: "), "\(stopped)")

                coordinator.child.send(SIGKILL)
                _ = await coordinator.child.exitStatus(within: .seconds(30))
                let resumed = try await cluster.resume()
                #expect(resumed.status == 0, "\(resumed.errors)")
            }
        }
    }
}
