import ArgumentParser
import Foundation
import Logging
import Orchestra
import OrchestraDurable
import OrchestraDurableHTTP
import OrchestraHTTP
import OrchestraPostgres
import OrchestraWorkflow
import ServiceLifecycle

/// `orchestra worker --state postgres://…`: sends the requests of the runs that
/// `orchestra run FILE --state postgres://…` hands to workers, on this machine, until stopped.
struct WorkerCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "worker",
        abstract: "Send the requests of distributed runs (orchestra run FILE --state postgres://…) from this machine.",
        discussion: """
            Start one or more workers, on this machine or others, against the PostgreSQL store \
            that 'orchestra run FILE --state postgres://…' uses: each claims requests of the \
            runs there (at most --limit at once), sends them, and stores their responses for the \
            run to read. The workflow's limits, 'limit' and each host's, hold across all \
            workers together. A worker waits for new runs when there is nothing to do.

            SIGTERM or Ctrl-C stops it gracefully: it claims nothing more, lets the requests it \
            is sending finish for up to --grace seconds, then gives back the others so another \
            worker sends them at once. A worker that dies (SIGKILL, a lost machine) has its \
            requests sent again by another worker once their leases (--lease) expire.

            A database that cannot be reached (down, starting up, out of connections) is \
            waited for, at start and in each outage while working, for --wait-for-store \
            seconds (as long as it takes by default), saying so on stderr when it stops \
            answering and when it answers again; SIGTERM or Ctrl-C still stops the worker, at \
            once while it waits at start, and within --grace plus 15 s while it works.

            Connections: a worker opens at most --connections to PostgreSQL (2 by default: \
            one listens for new work, one claims and records), a coordinator ('orchestra run \
            --state postgres://…') 3, 'orchestra status' 2. Keep the sum within the server's \
            max_connections: a process that finds the server full waits, saying so, and goes \
            on once a connection is free.

            Exit status: 0 stopped by a signal, 1 the store failed while working, 2 the store \
            cannot be used (a wrong URL, password or schema), 3 the store could not be reached \
            within --wait-for-store (trying again later may work).
            """
    )

    @Option(
        help: ArgumentHelp(
            "The PostgreSQL store: postgres://user[:password]@host:port/database (without a password: PGPASSWORD or ~/.pgpass; TLS: ?sslmode= and ?sslrootcert=, else PGSSLMODE and PGSSLROOTCERT).",
            valueName: "url"))
    var state: String

    @Option(help: ArgumentHelp("The schema of the store.", valueName: "name"))
    var schema = "orchestra"

    @Option(help: ArgumentHelp("How many requests this worker sends at once.", valueName: "n"))
    var limit = 8

    @Option(
        help: ArgumentHelp(
            "Seconds a claimed request stays this worker's without news from it (renewed every third of it while it runs); after a crash, another worker sends it once this has passed. 2 to 3600.",
            valueName: "seconds"))
    var lease = Self.defaultLease

    /// The default `--lease`, in seconds: a killed worker's requests are sent by another within
    /// about 11 s (the lease, then an idle worker's one-second poll), well within the default
    /// step timeout (30 s, which bounds each attempt, not the wait for a worker), while a live
    /// worker, renewing every 3.3 s, keeps its requests through a stall of more than 6 s (a
    /// starved machine, a restart of PostgreSQL) before another may take them.
    static let defaultLease = 10
    /// The longest `--lease`: an hour.
    static let maximumLease = 3600

    @Option(
        help: ArgumentHelp(
            "Seconds a graceful stop waits for the requests in flight before giving them back.", valueName: "seconds"))
    var grace = 10

    @Option(
        name: .customLong("wait-for-store"),
        help: ArgumentHelp(
            "Seconds to wait for a database that cannot be reached (down, starting up, out of connections), at start and in each outage while working; 0 does not wait. Default: as long as it takes.",
            valueName: "seconds"))
    var waitForStore: Int?

    @Option(
        help: ArgumentHelp(
            "The most connections to PostgreSQL this worker opens at once (its share of the server's max_connections): one listens for new work, the others claim and record. At least 2.",
            valueName: "n"))
    var connections = PostgresJobStore.defaultConnections

    @OptionGroup var transportOptions: TransportOptions

    @Flag(name: .long, help: "Turn colours off (as NO_COLOR does).")
    var noColor = false

    func validate() throws {
        guard StoreStatus.isPostgresURL(state) else {
            throw ValidationError("--state must be a PostgreSQL URL (postgres://user:password@host:port/database)")
        }
        guard limit >= 1 else { throw ValidationError("--limit must be at least 1, got \(limit)") }
        guard (2...Self.maximumLease).contains(lease) else {
            throw ValidationError("--lease must be 2 to \(Self.maximumLease) seconds, got \(lease)")
        }
        guard grace >= 0 else { throw ValidationError("--grace must be 0 or more seconds, got \(grace)") }
        guard connections >= 2 else {
            throw ValidationError(
                "--connections must be at least 2 (one listens for new work, one claims and records), got \(connections)"
            )
        }
        if let waitForStore, waitForStore < 0 {
            throw ValidationError("--wait-for-store must be 0 or more seconds, got \(waitForStore)")
        }
    }

    func run() async throws {
        let console = Console.standardOutput(noColor: noColor)
        let name = "\(ProcessInfo.processInfo.hostName)-\(getpid())"
        let quiet = Logger(label: "orchestra.worker", factory: { _ in SwiftLogNoOpLogHandler() })
        let sent = Locked((requests: 0, answered: 0, unreachable: 0))
        // SIGTERM or Ctrl-C stops the worker gracefully at any point: while it waits for its
        // database (it then ends at once), while it works (it lets its requests finish for
        // --grace seconds, then gives back the rest), and while a store that stopped answering
        // is tried again (past --grace and the time to give back, it is cancelled: the
        // requests it holds are sent by another worker once their leases expire).
        let process = WorkerProcess { whenOpened in
            try await PostgresJobStore.withStore(
                url: state, schema: schema, logger: quiet, waitingUpTo: waitForStore.map { .seconds($0) },
                connections: connections, outageTolerance: waitForStore.map { .seconds($0) },
                onConnectivity: StoreConnectivity.notes("orchestra worker")
            ) { store in
                whenOpened()
                let perHost = WorkflowLimits(limit: limit).connectionsPerHost
                try await transportOptions.withTransport(connectionsPerHost: perHost, command: "orchestra worker") {
                    transport in
                    let queue = DurableQueue(store: store, worker: name, leaseDuration: .seconds(lease))
                    queue.registerHTTPJobs(
                        sendingThrough: transport, whenSending: { sent.withLock { $0.requests += 1 } },
                        whenSent: { outcome in
                            sent.withLock {
                                if outcome.failure != nil { $0.unreachable += 1 } else { $0.answered += 1 }
                            }
                        })
                    console.line(
                        "\(console.paint("orchestra worker \(name)", .bold)): sending the requests of the runs in schema '\(schema)' at \(store.location), \(limit) at once; SIGTERM or Ctrl-C stops it"
                    )
                    try await DurableWorkerService(queue: queue, limit: limit, gracePeriod: .seconds(grace)).run()
                }
            }
        }
        var configuration = ServiceGroupConfiguration(
            services: [process], gracefulShutdownSignals: [.sigterm, .sigint], cancellationSignals: [], logger: quiet)
        configuration.maximumGracefulShutdownDuration = .seconds(grace) + Self.givingBackTime
        do {
            try await ServiceGroup(configuration: configuration).run()
        } catch  where process.stopping && process.opened && Self.isCancellation(error) {
            // The graceful stop outlasted --grace and the time to give back: the store did not
            // answer (an outage), and the worker was cancelled.
            Console.standardError.line(
                "orchestra worker: note: the store did not answer within \(grace + Int(Self.givingBackTime.seconds)) s of the stop; the requests still held are sent by another worker once their leases expire"
            )
        } catch {
            Console.standardError.line(
                "orchestra worker: error: \(process.opened ? "" : "--state: ")\(TerminalText.safe("\(error)"))")
            throw ExitCode(process.opened ? 1 : StoreConnectivity.exitStatus(openingFailedWith: error))
        }
        if process.stoppedBeforeOpening {
            console.line("stopped: before the store answered; no request sent")
            return
        }
        console.line("stopped: " + Self.closingCounts(sent.withLock { $0 }))
    }

    /// Whether `error` is the end of work cancelled, as the store or the service group says it.
    static func isCancellation(_ error: any Error) -> Bool {
        error is CancellationError || error is ServiceGroupError
            || (error as? DurableError)?.underlying is CancellationError
    }

    /// How long a graceful stop may take beyond --grace: to record the outcomes of the requests
    /// that finished and give back the others. Past it, the worker is cancelled.
    static let givingBackTime: Duration = .seconds(15)

    /// The closing line's counts: the requests sent (handed to the transport), those of them
    /// that got no response (a transport error), and those still in flight when the worker
    /// stopped (their jobs given back, or left to their leases, for another worker to send).
    static func closingCounts(_ counts: (requests: Int, answered: Int, unreachable: Int)) -> String {
        let inFlight = max(0, counts.requests - counts.answered - counts.unreachable)
        return "\(Format.count(counts.requests, "request")) sent"
            + (counts.unreachable > 0 ? ", \(counts.unreachable) without a response" : "")
            + (inFlight > 0 ? ", \(inFlight) in flight when it stopped (given back unanswered)" : "")
    }
}

/// The worker as the one service of the command's `ServiceGroup`: opens the store (waiting for
/// it, if need be), then works. A graceful shutdown before the store opened ends the wait at
/// once; after, it stops the worker gracefully (``DurableWorkerService``).
private final class WorkerProcess: Service, Sendable {
    private let body: @Sendable (_ whenOpened: @escaping @Sendable () -> Void) async throws -> Void
    private let state = Locked((opened: false, stoppedBeforeOpening: false, stopping: false))

    init(_ body: @escaping @Sendable (_ whenOpened: @escaping @Sendable () -> Void) async throws -> Void) {
        self.body = body
    }

    /// Whether the store opened (the body was told so).
    var opened: Bool { state.withLock { $0.opened } }

    /// Whether a graceful shutdown ended the wait for the store.
    var stoppedBeforeOpening: Bool { state.withLock { $0.stoppedBeforeOpening } }

    /// Whether a graceful shutdown began.
    var stopping: Bool { state.withLock { $0.stopping } }

    func run() async throws {
        let (abandoned, abandon) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
        try await withGracefulShutdownHandler {
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { [body, state] in
                    defer { abandon.finish() }
                    try await body { state.withLock { $0.opened = true } }
                }
                // Ends when the wait for the store is abandoned, or with the body.
                group.addTask {
                    for await _ in abandoned { break }
                }
                do {
                    try await group.next()
                    group.cancelAll()
                    try await group.waitForAll()
                } catch  where stoppedBeforeOpening {
                    // The wait for the store, cancelled: not an error.
                }
            }
        } onGracefulShutdown: { [state] in
            let abandoning = state.withLock { state in
                state.stopping = true
                guard !state.opened else { return false }
                state.stoppedBeforeOpening = true
                return true
            }
            if abandoning { abandon.yield() }
        }
    }
}
