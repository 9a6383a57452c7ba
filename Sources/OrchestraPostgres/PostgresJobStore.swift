import Foundation
import Logging
import Orchestra
import OrchestraDurable
import PostgresNIO

/// A `JobStore` in PostgreSQL, shared by any number of worker processes on any number of
/// machines: each `DurableQueue` over it claims jobs in batches, and the limits of a run (its
/// `limit` and each named resource's) hold across all of them together.
///
/// ```swift
/// try await PostgresJobStore.withStore(url: "postgres://app:secret@db.internal/app") { store in
///     let queue = DurableQueue(store: store)
///     queue.register(fetch) { request, context in try await api.page(request) }
///     try await queue.drain()
/// }
/// ```
///
/// Every method is one transaction, but ``record(_:thenClaim:now:)``, which may be two. Claims
/// take a transaction-scoped advisory lock, so two workers never admit jobs past a limit
/// together, and read ready jobs with `FOR UPDATE SKIP LOCKED`, so a claim never waits for rows
/// another transaction is changing. A job whose worker died is claimable again once its lease
/// expires. Outcomes are recorded in the transaction that releases the job's dependents, and an
/// outcome of an attempt that is no longer the job's current one is refused. When they release
/// work and the claim lock is free at that moment, the worker's claim is made in the same
/// transaction (the dependent of a chain starts one transaction sooner); else the claim has a
/// transaction of its own, so that outcomes never wait for the claim lock while they hold
/// their runs' locks.
///
/// The tables live in their own PostgreSQL schema (`orchestra` by default), created and
/// migrated by ``migrate()`` under an advisory lock, so many workers may start at once.
public final class PostgresJobStore: JobStore {
    /// The client the store's queries go through; it must be running (`client.run()`) while the
    /// store is used.
    public let client: PostgresClient
    /// The PostgreSQL schema that holds the tables.
    public let schema: String
    /// Where the server is, for messages (`host:port/database`).
    public let location: String
    /// How long an idle worker waits at most before it looks for work again, should a
    /// notification have been lost (a connection dropped, the server restarted): the poll of
    /// its ``workSignal``.
    public let pollInterval: Duration?
    let logger: Logger
    /// Says when the server stops answering, and when it answers again.
    let connectivity: ConnectivityWatch
    /// How long an operation keeps trying while the server cannot be reached, before it fails
    /// with `DurableError/Code/storeUnreachable`; `nil`: for as long as it takes.
    public let outageTolerance: Duration?
    /// Opens a connection of its own, to tell why the pool gave none in time (the server
    /// takes no more connections, say); set by ``withStore(url:schema:pollInterval:logger:migrating:waitingUpTo:connections:outageTolerance:onConnectivity:_:)``.
    let diagnose: (@Sendable () async -> String?)?
    /// For tests: see ``TryHooks``.
    let tries: TryHooks
    /// Whether the client's connections start with their `search_path` set to ``schema`` (a
    /// client of ``withStore(url:schema:pollInterval:logger:migrating:waitingUpTo:connections:outageTolerance:onConnectivity:_:)``);
    /// else each transaction sets it for the prepared statements, which name their tables
    /// without it (``preparing(_:)``).
    let connectionsUseSchema: Bool
    /// The connections the store uses, from the first operation on each (``watch(_:during:)``)
    /// until it closes.
    let connections = Locked<[PostgresConnection.ID: ConnectionInUse]>([:])
    /// The runs this store last found open for jobs as it recorded their outcomes: their next
    /// outcomes take the run's shared lock first (``lockRunForOutcomes(_:_:)``). At most
    /// 1,024, forgotten all at once beyond.
    let runsSeenOpen = Locked<Set<String>>([])

    /// A store over `client`, in `schema`. Call ``migrate()`` once before using it.
    ///
    /// The client may serve the app and stores of other schemas too: each of the store's
    /// transactions sets its own `search_path` and `plan_cache_mode` (for that transaction
    /// only) for the statements it prepares on the client's connections. A store of
    /// ``withStore(url:schema:pollInterval:logger:migrating:waitingUpTo:connections:outageTolerance:onConnectivity:_:)``
    /// has a client of its own, and needs neither.
    ///
    /// - Parameters:
    ///   - client: A client that runs (`client.run()`) while the store is used.
    ///   - schema: The PostgreSQL schema of the tables; stores in different schemas of one
    ///     database are independent.
    ///   - location: Where the server is, for messages.
    ///   - pollInterval: At most this long between an idle worker's looks for work, besides
    ///     the notifications (`LISTEN`) that wake it as soon as another worker releases jobs;
    ///     `nil` relies on notifications and due times alone (tests on a manual clock).
    ///   - logger: The client's queries are logged here (at trace level).
    ///   - outageTolerance: How long an operation keeps trying while the server cannot be
    ///     reached (down, restarting, out of connections) before it fails; `nil`: for as long
    ///     as it takes (a long-lived worker).
    ///   - onConnectivity: Told when the server stops answering (once per outage, while the
    ///     store keeps trying) and when it answers again: for a process to say so.
    ///
    /// - Throws: `DurableError` with code `DurableError/Code/storeFailed` if `schema` is not
    ///   a plain lower-case identifier (letters, digits and `_`, at most 48 characters).
    public convenience init(
        client: PostgresClient, schema: String = "orchestra", location: String = "PostgreSQL",
        pollInterval: Duration? = .seconds(1), logger: Logger = Logger(label: "orchestra.postgres"),
        outageTolerance: Duration? = defaultOutageTolerance,
        onConnectivity: (@Sendable (PostgresConnectivity) -> Void)? = nil
    ) throws(DurableError) {
        try self.init(
            client: client, schema: schema, location: location, pollInterval: pollInterval, logger: logger,
            outageTolerance: outageTolerance, connectivity: ConnectivityWatch(onConnectivity), diagnose: nil)
    }

    /// A store whose connectivity `connectivity` tells, and that asks `diagnose` why the pool
    /// gave no connection in time.
    init(
        client: PostgresClient, schema: String, location: String, pollInterval: Duration?, logger: Logger,
        outageTolerance: Duration?, connectivity: ConnectivityWatch, diagnose: (@Sendable () async -> String?)?,
        tries: TryHooks = TryHooks(), connectionsUseSchema: Bool = false
    ) throws(DurableError) {
        guard Self.isIdentifier(schema) else {
            throw DurableError(
                code: .storeFailed,
                message:
                    "the schema name '\(schema)' is not a plain identifier: use lower-case letters, digits and _, at most 48 characters, starting with a letter"
            )
        }
        self.client = client
        self.schema = schema
        self.location = location
        self.pollInterval = pollInterval
        self.logger = logger
        self.outageTolerance = outageTolerance
        self.connectivity = connectivity
        self.diagnose = diagnose
        self.tries = tries
        self.connectionsUseSchema = connectionsUseSchema
    }

    /// Listens (`LISTEN`) on the store's work channel on a connection of its own, calling
    /// `onWork` for each notification but those of `worker`'s own outcomes (they notify with its
    /// name), until the calling task is cancelled. A lost connection is opened again after
    /// ``pollInterval`` (the idle workers poll meanwhile).
    public func listenForWork(ignoring worker: String, _ onWork: @escaping @Sendable () -> Void) async throws {
        try await listen(on: workChannel) { payload in
            if payload != worker { onWork() }
        }
    }

    /// Listens on the store's outcome channel, as ``listenForWork(ignoring:_:)`` does on its
    /// work channel, telling `onOutcome` the jobs each notification names (`OutcomeNotice`;
    /// `OutcomeNotice.any` when listening begins).
    public func listenForOutcomes(_ onOutcome: @escaping @Sendable (OutcomeNotice) -> Void) async throws {
        try await listen(on: outcomeChannel) { payload in
            onOutcome(payload.map(Self.outcomeNotice) ?? .any)
        }
    }

    /// Calls `onNotification` once listening on `channel` has begun (with `nil`: anything sent
    /// before is looked for then) and with the payload of each notification, connecting again
    /// after a lost connection, until the task is cancelled.
    ///
    /// A connection lost to an outage is one (told to `onConnectivity`, as a failed operation
    /// is), and listening again its end: a process that waits on its notifications (a
    /// coordinator between outcomes, an idle worker) says so even if none of its operations
    /// met the outage.
    private func listen(
        on channel: String, _ onNotification: @escaping @Sendable (_ payload: String?) -> Void
    ) async throws {
        let connectivity = self.connectivity
        while !Task.isCancelled {
            do {
                try await client.withConnection { connection in
                    try await connection.listen(on: channel) { notifications in
                        connectivity.answered()
                        onNotification(nil)
                        for try await notification in notifications { onNotification(notification.payload) }
                    }
                }
            } catch is CancellationError {
                return
            } catch {
                if Task.isCancelled { return }
                if Self.isOutage(error) { connectivity.failed(mapped(error).message) }
            }
            // Not a wait for something to happen: the pause before connecting again.
            try await Task.sleep(for: pollInterval ?? .seconds(1))
        }
    }

    static func isIdentifier(_ name: String) -> Bool {
        guard let first = name.unicodeScalars.first, ("a"..."z").contains(first), name.utf8.count <= 48 else {
            return false
        }
        return name.unicodeScalars.allSatisfy { ("a"..."z").contains($0) || ("0"..."9").contains($0) || $0 == "_" }
    }

    /// Runs `body` with a store on the server at `url` (`postgres://user:password@host:port/database`),
    /// its client running for the duration, after creating or migrating its schema (or, with
    /// `migrating` `false`, after checking that it holds a store: ``check()``, for a reader).
    ///
    /// One connection is opened first, on its own, so that a server that refuses the
    /// credentials is an error at once (the client's pool would keep trying). A server that
    /// cannot be reached (down, starting up, out of connections) is tried again, pausing
    /// between tries, for up to `waitingUpTo` (`nil`: for as long as it takes), and
    /// `onConnectivity` is told when it waits and when the server answers.
    ///
    /// Cancellation: cancelling the caller cancels `body` (or the wait for the server) and
    /// closes the connections.
    ///
    /// `waitingUpTo` is how long to wait for a server that cannot be reached at start (`.zero`,
    /// the default: not at all; `nil`: as long as it takes). `onConnectivity` is told when the
    /// server cannot be reached and the store keeps trying (at start, and in an outage while
    /// working, for up to `outageTolerance` each time: ``defaultOutageTolerance``, `nil` for
    /// as long as it takes), and when it answers again. `connections` is the most connections the store
    /// opens at once, at least 2 (see ``defaultConnections``): a process's share of the
    /// server's `max_connections`.
    ///
    /// - Throws: `DurableError` with code `DurableError/Code/storeUnreachable` for a server
    ///   that could not be reached within `waitingUpTo`; `DurableError/Code/connectionFailed`
    ///   for a URL that cannot be read or a server that refuses the credentials (or has no
    ///   such database); `DurableError/Code/foreignDatabase` or
    ///   `DurableError/Code/schemaFromNewerVersion` from ``migrate()``; and whatever `body`
    ///   throws.
    public static func withStore<T: Sendable>(
        url: String, schema: String = "orchestra", pollInterval: Duration? = .seconds(1),
        logger: Logger = Logger(label: "orchestra.postgres"), migrating: Bool = true,
        waitingUpTo wait: Duration? = .zero, connections: Int = defaultConnections,
        outageTolerance: Duration? = defaultOutageTolerance,
        onConnectivity: (@Sendable (PostgresConnectivity) -> Void)? = nil,
        _ body: (PostgresJobStore) async throws -> T
    ) async throws -> T {
        let server = try Server(url: url)
        guard connections >= 2 else {
            throw DurableError(
                code: .connectionFailed,
                message:
                    "a store needs at least 2 connections (one listens for notifications, one works), got \(connections)"
            )
        }
        let connectivity = ConnectivityWatch(onConnectivity)
        let free = try await server.probe(logger: logger, waitingUpTo: wait, connectivity: connectivity)
        // Within what the server has left: PostgresNIO's pool, once the server refused it a
        // connection, queues every request until a connection comes back to it, even with one
        // idle, and a process that asked for more than the server had crawled.
        let budget = max(2, min(connections, free ?? connections))
        if budget < connections { connectivity.tell(.fewerConnections(using: budget, asked: connections)) }
        var configuration = server.clientConfiguration
        configuration.options.maximumConnections = budget
        // And should it happen (another process took the last ones), a keep-alive query on an
        // idle connection brings that connection back to the pool within a second.
        configuration.options.keepAliveBehavior = .init(frequency: .seconds(1))
        // The prepared statements' tables (`PreparedStatements`), on every connection from its start.
        configuration.options.additionalStartupParameters.append(("search_path", searchPath(schema)))
        let store = try PostgresJobStore(
            client: PostgresClient(configuration: configuration), schema: schema, location: server.location,
            pollInterval: pollInterval, logger: logger, outageTolerance: outageTolerance, connectivity: connectivity,
            diagnose: server.diagnosis(logger: logger), connectionsUseSchema: true)
        let client = store.client
        // Detached, not a child task: `PostgresClient.run()` closes the pool at a graceful
        // shutdown of the `ServiceGroup` it runs in (it reads the group's task-local), and a
        // worker stopping gracefully inside `body` still records outcomes and gives back jobs.
        // It ends when this does, and is waited for.
        let running = Task.detached { await client.run() }
        let result = await Result {
            if migrating { try await store.migrate() } else { try await store.check() }
            return try await body(store)
        }
        running.cancel()
        await running.value
        return try result.get()
    }

    /// How many connections a store of ``withStore(url:schema:pollInterval:logger:migrating:waitingUpTo:connections:outageTolerance:onConnectivity:_:)``
    /// opens at most, by default: two. One is held by `LISTEN` while the store listens for
    /// notifications (a worker for work, a process waiting for outcomes for those), the other
    /// runs the claims, outcomes, lease renewals and reads, one after another.
    ///
    /// Keep the sum over all processes within the server's `max_connections`. PostgresNIO's
    /// pool, once the server refused it a connection, hands out none until one is given back,
    /// even with one idle: a process whose budget the server cannot meet works, but slowly.
    /// A third connection let a coordinator appending requests and reading responses at once
    /// run 1.2 to 1.5 times as fast; a worker sending 32 requests at once gained nothing from it.
    public static let defaultConnections = 2

    /// The client configuration for `url`: `postgres://user:password@host:port/database`
    /// (or `postgresql://`), the port 5432 by default; `?sslmode=` and `?sslrootcert=` as
    /// libpq reads them (else `PGSSLMODE` and `PGSSLROOTCERT`; `sslmode` prefer by default).
    /// Also returns where the server is, for messages (never the password).
    ///
    /// - Throws: `DurableError` with code `DurableError/Code/connectionFailed` naming what
    ///   is missing or wrong in the URL.
    public static func configuration(url: String) throws(DurableError) -> (PostgresClient.Configuration, String) {
        let server = try Server(url: url)
        return (server.clientConfiguration, server.location)
    }

    /// A server as a URL names it.
    struct Server {
        var host: String
        var port: Int
        var user: String
        var password: String?
        var database: String
        var tls: TLSMode
        /// The CA certificates that verify the server's certificate (`verify-ca`, `verify-full`),
        /// read once from `?sslrootcert=` (else `PGSSLROOTCERT`), else from
        /// `~/.postgresql/root.crt` if it exists; `nil`
        /// for the system's (as `sslrootcert=system` asks).
        var rootCertificates: [NIOSSLCertificate]?

        /// `?sslmode=` of the URL (else `PGSSLMODE`), as libpq reads it: `disable` no TLS; `allow` and `prefer`
        /// (the default) TLS if the server offers it, `require` TLS or nothing, each encrypting
        /// without checking the server's certificate; `verify-ca` checks that a trusted CA signed
        /// it, `verify-full` also that it names the host. (libpq's `allow` tries without TLS
        /// first; here it is `prefer`.) `require` with an `sslrootcert` is `verify-ca`, as in libpq.
        enum TLSMode: String, CaseIterable {
            case disable, allow, prefer, require
            case verifyCA = "verify-ca"
            case verifyFull = "verify-full"
        }

        /// Where the server is, for messages: `host:port/database`.
        var location: String { "\(host):\(port)/\(database)" }

        /// The server `url` names; what it leaves out (a password, the CAs of `verify-…`) is
        /// taken from `environment`, as libpq clients do.
        init(url: String, environment: PostgresEnvironment = PostgresEnvironment()) throws(DurableError) {
            func refuse(_ problem: String) -> DurableError {
                DurableError(code: .connectionFailed, message: "the PostgreSQL URL \(redacted(url)) \(problem)")
            }
            guard let components = URLComponents(string: url), let scheme = components.scheme else {
                throw refuse("is not a URL: expected postgres://user:password@host:port/database")
            }
            guard scheme == "postgres" || scheme == "postgresql" else {
                throw refuse("has the scheme '\(scheme)': expected postgres:// or postgresql://")
            }
            guard let host = components.host, !host.isEmpty else { throw refuse("has no host") }
            guard let user = components.user, !user.isEmpty else { throw refuse("has no user name") }
            let port = components.port ?? 5432
            guard (1...65_535).contains(port) else { throw refuse("has the port \(port), not 1…65535") }
            // The URL's parameter, else the environment's variable (as libpq reads them), and
            // what to call it in a message.
            func parameter(_ name: String, variable: String) -> (value: String, source: String)? {
                if let value = components.queryItems?.first(where: { $0.name == name })?.value {
                    return (value, "has \(name)=\(value)")
                }
                return environment.value(of: variable).map { ($0, "has no \(name), and \(variable) is '\($0)'") }
            }
            let mode = parameter("sslmode", variable: "PGSSLMODE")
            guard var tls = TLSMode(rawValue: mode?.value ?? "prefer") else {
                throw refuse(
                    "\(mode?.source ?? ""): expected \(TLSMode.allCases.map(\.rawValue).joined(separator: ", "))")
            }
            func certificates(in file: String, named source: String) throws(DurableError) -> [NIOSSLCertificate] {
                guard let found = try? NIOSSLCertificate.fromPEMFile(file), !found.isEmpty else {
                    throw refuse("\(source): no PEM certificate can be read from that file")
                }
                return found
            }
            switch parameter("sslrootcert", variable: "PGSSLROOTCERT") {
            case ("system", _)?:
                rootCertificates = nil
            case let (file, source)?:
                rootCertificates = try certificates(in: file, named: source)
                if tls == .require { tls = .verifyCA }
            case nil:
                let file = tls == .verifyCA || tls == .verifyFull ? environment.rootCertificateFile : nil
                rootCertificates = try file.map { file throws(DurableError) in
                    try certificates(in: file, named: "has no sslrootcert, and \(file)")
                }
            }
            let database = String(components.path.drop(while: { $0 == "/" }))
            self.host = host
            self.port = port
            self.user = user
            self.database = database.isEmpty ? user : database
            self.password =
                components.password
                ?? environment.password(host: host, port: port, database: self.database, user: user)
            self.tls = tls
        }

        /// The TLS of `sslmode` and `sslrootcert`.
        var tlsConfiguration: TLSConfiguration {
            var configuration = TLSConfiguration.makeClientConfiguration()
            switch tls {
            case .disable, .allow, .prefer, .require: configuration.certificateVerification = .none
            case .verifyCA: configuration.certificateVerification = .noHostnameVerification
            case .verifyFull: configuration.certificateVerification = .fullVerification
            }
            if let rootCertificates { configuration.trustRoots = .certificates(rootCertificates) }
            return configuration
        }

        var clientConfiguration: PostgresClient.Configuration {
            let tls: PostgresClient.Configuration.TLS =
                switch self.tls {
                case .disable: .disable
                case .allow, .prefer: .prefer(tlsConfiguration)
                case .require, .verifyCA, .verifyFull: .require(tlsConfiguration)
                }
            var configuration = PostgresClient.Configuration(
                host: host, port: port, username: user, password: password, database: database, tls: tls)
            configuration.options.connectTimeout = PostgresJobStore.connectTimeout
            return configuration
        }

        /// Opens one connection and closes it.
        ///
        /// - Throws: `DurableError` with code `DurableError/Code/connectionFailed`.
        ///
        /// - Returns: The connections the server would still give this user, counting the one
        ///   the probe opened as free (`nil` if that could not be read).
        func probe(logger: Logger, waitingUpTo wait: Duration?, connectivity: ConnectivityWatch) async throws -> Int? {
            let start = ContinuousClock.now
            var pause: Duration = .milliseconds(250)
            var tries = 0
            while true {
                do {
                    let free = try await probeOnce(logger: logger)
                    connectivity.answered()
                    return free
                } catch let error as DurableError where error.code == .storeUnreachable {
                    tries += 1
                    let waited = start.duration(to: .now)
                    guard wait.map({ waited + pause <= $0 }) ?? true, !Task.isCancelled else {
                        // Not waited for (`.zero`): the error as it is, without "(waited 0 s)".
                        guard tries > 1 else { throw error }
                        throw DurableError(
                            code: .storeUnreachable,
                            message: "\(error.message) (waited \(Int(waited.seconds.rounded())) s)",
                            underlying: error.underlying)
                    }
                    connectivity.failed(error.message)
                    // Not a wait for something to happen: the pause between tries of a server
                    // that is down or starting.
                    try await Task.sleep(for: pause)
                    pause = min(pause * 2, .seconds(5))
                }
            }
        }

        /// Why a connection cannot be had, from one of its own: `nil` if it opens.
        func diagnosis(logger: Logger) -> @Sendable () async -> String? {
            { [self] in
                do {
                    _ = try await probeOnce(logger: logger)
                    return nil
                } catch let error as DurableError {
                    return error.message
                } catch {
                    return nil
                }
            }
        }

        /// One connection, opened and closed.
        ///
        /// - Throws: `DurableError`: `storeUnreachable` if the server cannot be reached (or
        ///   takes no more connections), `connectionFailed` if it refuses the credentials.
        ///
        /// - Returns: The connections the server would still give this user, counting the one
        ///   the probe opened as free: `max_connections` less those reserved for superusers
        ///   (for a user that is not one) less the client connections open; `nil` if that
        ///   could not be read.
        func probeOnce(logger: Logger) async throws -> Int? {
            let tls: PostgresConnection.Configuration.TLS =
                switch self.tls {
                case .disable: .disable
                case .allow, .prefer: .prefer(try .init(configuration: tlsConfiguration))
                case .require, .verifyCA, .verifyFull: .require(try .init(configuration: tlsConfiguration))
                }
            var configuration = PostgresConnection.Configuration(
                host: host, port: port, username: user, password: password, database: database, tls: tls)
            configuration.options.connectTimeout = .seconds(Int64(PostgresJobStore.connectTimeout.components.seconds))
            do {
                let connection = try await PostgresConnection.connect(
                    configuration: configuration, id: 0, logger: logger)
                let free = try? await connection.query(
                    """
                    SELECT current_setting('max_connections')::int
                        - CASE WHEN (SELECT rolsuper FROM pg_roles WHERE rolname = current_user) THEN 0
                               ELSE current_setting('superuser_reserved_connections')::int END
                        - (SELECT count(*)::int FROM pg_stat_activity WHERE backend_type = 'client backend') + 1
                    """,
                    logger: logger
                ).decode(Int.self).onlyRow()
                try? await connection.close()
                return free
            } catch {
                let mapped = PostgresJobStore.mapped(error, location: location)
                throw DurableError(
                    code: PostgresJobStore.isOutage(error) ? .storeUnreachable : .connectionFailed,
                    message: mapped.message, underlying: mapped.underlying ?? error)
            }
        }
    }

    /// `url` with its password replaced by `***`.
    static func redacted(_ url: String) -> String {
        guard var components = URLComponents(string: url), components.password != nil else { return url }
        components.password = "***"
        return components.string ?? "(a URL)"
    }

    /// `schema.name`, for SQL.
    func table(_ name: String) -> String { "\(schema).\(name)" }

    /// The ids of `jobs`, by run: a statement per run, with `id = ANY(…)`.
    static func idsByRun(_ jobs: [JobKey]) -> [String: [String]] {
        Dictionary(grouping: jobs, by: \.runID).mapValues { $0.map(\.jobID) }
    }

    // MARK: - Transactions and errors

    /// Runs `body` in a transaction. Retried when PostgreSQL aborts it for a deadlock or a
    /// serialization failure (at most 5 times), and while the server cannot be reached (it
    /// restarts, a connection dropped: for up to ``outageTolerance``, pausing between tries).
    ///
    /// A try given up (its time ran out, or its commit was cut off) may still commit; the
    /// operations that must not be done twice ask their ``Try`` (claims and outcomes: see
    /// `recordAndClaim`); the others are the same done again.
    ///
    /// - Parameter timeout: How long one try may take before it is given up and tried again:
    ///   ``operationTimeout``, or ``bulkOperationTimeout`` for one that writes a whole run.
    func transaction<T: Sendable>(
        timeout: Duration = operationTimeout, _ body: @escaping @Sendable (PostgresConnection) async throws -> T
    ) async throws -> T {
        try await transaction(timeout: timeout) { connection, _ in try await body(connection) }
    }

    /// ``transaction(timeout:_:)``, its body told which try it is.
    func transaction<T: Sendable>(
        timeout: Duration = operationTimeout,
        _ body: @escaping @Sendable (PostgresConnection, Try) async throws -> T
    ) async throws -> T {
        let (client, logger) = (self.client, self.logger)
        return try await retrying(timeout: timeout) { [self] current in
            defer { stopWatching(current) }
            return try await client.withTransaction(logger: logger) { connection in
                await watch(connection, during: current)
                try await preparing(connection)
                return try await body(connection, current)
            }
        }
    }

    /// Readies `connection` for the prepared statements (`PreparedStatements`): one statement,
    /// none most of the time.
    ///
    /// - A connection of the store's own client (it started with the store's `search_path`)
    ///   drops its cached plans (`DISCARD PLANS`) every ``replanningInterval`` operations.
    ///   After five uses of a prepared statement, PostgreSQL may plan it once for any values
    ///   (a generic plan), from the tables as they are then, and keeps that plan: made while a
    ///   new run had a few jobs, it found jobs by id by reading every job of the run (`run_id`
    ///   in the index, the ids a filter), and kept doing so as the run grew to thousands (a run
    ///   of 10,000 requests took 10.3 s instead of 6). Planned again, it fits the tables as
    ///   they are now.
    /// - A store over a client it was given sets the transaction's `search_path` to its schema,
    ///   and plans for each use (`plan_cache_mode`): the client's connections, and their plans,
    ///   are the app's too.
    func preparing(_ connection: PostgresConnection) async throws {
        guard connectionsUseSchema else {
            try await connection.query(
                """
                SELECT set_config('search_path', \(Self.searchPath(schema)), true),
                    set_config('plan_cache_mode', 'force_custom_plan', true)
                """, logger: logger)
            return
        }
        let due = connections.withLock { connections in
            // None for a connection that closed since its try began: its next query fails.
            guard let count = connections[connection.id].map({ $0.sinceReplanning + 1 }) else { return false }
            connections[connection.id]?.sinceReplanning = count < Self.replanningInterval ? count : 0
            return count == Self.replanningInterval
        }
        if due { try await connection.query("DISCARD PLANS", logger: logger) }
    }

    /// How many operations (transactions and reads) a connection of the store's own runs between
    /// two `DISCARD PLANS` (``preparing(_:)``): a plan made for a smaller table is used at most
    /// this many times more.
    static let replanningInterval = 256

    /// The `search_path` of a store's connections: its schema, then the session's temporary
    /// tables (last, not first as by default: a temporary table named `jobs` on a client shared
    /// with the app must not stand in for the store's).
    static func searchPath(_ schema: String) -> String { "\(schema), pg_temp" }

    /// One try of an operation: its number, from 1, and whether it was given up (its time
    /// ran out; a later try is on its way or done). A try given up goes on, unseen, until its
    /// query ends, and may commit.
    struct Try: Sendable {
        let number: Int
        fileprivate let givenUp = Locked(false)
        /// Gives this try up at once when its connection closes (``watch(_:during:)``).
        let abandonment = TryAbandonment()

        /// Whether an earlier try may have done the work (its commit unseen).
        var isRetry: Bool { number > 1 }
        /// Whether this try was given up: what it does is not seen by the caller.
        var wasGivenUp: Bool { givenUp.withLock { $0 } }
    }

    /// For tests: the wait after which a try is given up (told the try's number and its time;
    /// by default a sleep of that time), and what runs after each try's transaction ended,
    /// before its result counts. A try held there until its wait ends committed and was given
    /// up, as on a machine too busy to hear the answer in time.
    package struct TryHooks: Sendable {
        package var timer: (@Sendable (_ try: Int, _ timeout: Duration) async -> Void)?
        package var afterTry: (@Sendable (_ try: Int) async -> Void)?

        package init(
            timer: (@Sendable (_ try: Int, _ timeout: Duration) async -> Void)? = nil,
            afterTry: (@Sendable (_ try: Int) async -> Void)? = nil
        ) {
            self.timer = timer
            self.afterTry = afterTry
        }
    }

    /// Runs `body` on a connection, outside a transaction (reads), retried as
    /// ``transaction(_:)`` is.
    ///
    /// A store over a client it was given reads in a transaction, to set its `search_path`
    /// there for the prepared statements (``preparing(_:)``).
    func read<T: Sendable>(_ body: @escaping @Sendable (PostgresConnection) async throws -> T) async throws -> T {
        guard connectionsUseSchema else { return try await transaction(body) }
        let client = self.client
        return try await retrying { [self] current in
            defer { stopWatching(current) }
            return try await client.withConnection { connection in
                await watch(connection, during: current)
                try await preparing(connection)
                return try await body(connection)
            }
        }
    }

    /// How long an operation keeps trying while the server cannot be reached, by default,
    /// before it fails with `DurableError/Code/storeUnreachable`: two minutes, longer than a
    /// restart of the server.
    public static let defaultOutageTolerance: Duration = .seconds(120)

    /// The longest one try of an operation may take before it counts as an outage: a query
    /// or a connection from the pool that never answers after the server restarted is given
    /// up and tried again. Claims, outcomes, appends and reads take milliseconds; 10 s keeps a
    /// restart of the server from stalling a run (and the requests waiting on it) for long.
    static let operationTimeout: Duration = .seconds(10)

    /// ``operationTimeout`` for the operations that write or remove whole runs (a submitted
    /// graph of 100,000 jobs, the removal of old runs), which may take seconds.
    static let bulkOperationTimeout: Duration = .seconds(120)

    private func retrying<T: Sendable>(
        timeout: Duration = operationTimeout, _ body: @escaping @Sendable (Try) async throws -> T
    ) async throws -> T {
        var conflicts = 0
        var pause: Duration = .milliseconds(50)
        var waited: Duration = .zero
        var number = 0
        let (timer, afterTry) = (tries.timer, tries.afterTry)
        while true {
            number += 1
            let current = Try(number: number)
            var wait: (@Sendable () async -> Void)?
            if let timer { wait = { await timer(current.number, timeout) } }
            let work: @Sendable () async throws -> T = {
                let result = try await body(current)
                await afterTry?(current.number)
                return result
            }
            do {
                let result = try await Self.abandoning(
                    after: timeout, timer: wait, givingUp: { current.givenUp.withLock { $0 = true } },
                    abandonment: current.abandonment, work)
                connectivity.answered()
                return result
            } catch let error as TimeoutError {
                guard outageTolerance.map({ waited < $0 }) ?? true, !Task.isCancelled else {
                    throw unreachable(mapped(error), waited: waited)
                }
                logger.warning("PostgreSQL at \(location) did not answer in \(timeout); trying again")
                // The pool gave no connection in time, or the server did not answer: a
                // connection of its own tells which (one that takes no more connections says so).
                let why = await diagnose?() ?? "PostgreSQL at \(location) did not answer in \(timeout)"
                connectivity.failed(why)
                waited += timeout
            } catch {
                let cause =
                    (error as? PostgresTransactionError).map {
                        $0.closureError ?? $0.commitError ?? $0.beginError ?? error
                    } ?? error
                if Self.isConflict(cause), conflicts < 5 {
                    conflicts += 1
                    continue
                }
                guard Self.isOutage(cause) else { throw mapped(cause) }
                guard outageTolerance.map({ waited < $0 }) ?? true, !Task.isCancelled else {
                    throw unreachable(mapped(cause), waited: waited)
                }
                logger.info("PostgreSQL at \(location) unavailable, trying again in \(pause): \(cause)")
                connectivity.failed(mapped(cause).message)
                // Not a wait for something to happen: the pause between tries of a server that
                // is restarting.
                try await Task.sleep(for: pause)
                waited += pause
                pause = min(pause * 2, .seconds(2))
            }
        }
    }

    /// `error`, met in an outage that lasted `waited`, as `DurableError/Code/storeUnreachable`
    /// (a cancelled wait stays as it is).
    private func unreachable(_ error: DurableError, waited: Duration) -> DurableError {
        guard !Task.isCancelled else { return error }
        return DurableError(
            code: .storeUnreachable, message: "\(error.message) (tried for \(Int(waited.seconds.rounded())) s)",
            underlying: error.underlying ?? error)
    }

    /// Runs `body`, and gives up on it with `TimeoutError` after `timeout`, whether or not it
    /// ends when cancelled. A query sent on a connection the server closed as it restarted was
    /// seen to never answer, and to ignore cancellation: a structured timeout then waits for it
    /// forever, and the worker stops with jobs it ran but never recorded.
    ///
    /// The timer ends with the operation: one that ends in time leaves no sleeping task behind
    /// (a worker makes a thousand of these a second, each with a 10-second timer).
    ///
    /// Cancelling the caller while the operation runs cancels the operation too (a transaction
    /// then rolls back, unless its commit was under way): its caller has been told
    /// `CancellationError` and never sees its result, so a claim must not go on to take jobs
    /// that no worker will run (an at-most-once job would end "may have been sent" at its
    /// lease's end, though it never started). A caller cancelled before the call still runs it
    /// (what a stopping process records on its way out).
    ///
    /// `abandonment`, once told, gives the operation up at once with
    /// ``ConnectionClosedMidOperation``, as its timer would: its connection closed, and a query
    /// left on it may never answer.
    static func abandoning<T: Sendable>(
        after timeout: Duration, timer: (@Sendable () async -> Void)? = nil,
        givingUp: @escaping @Sendable () -> Void = {}, abandonment: TryAbandonment? = nil,
        _ body: @escaping @Sendable () async throws -> T
    ) async throws -> T {
        let outcome = Locked<CheckedContinuation<T, any Error>?>(nil)
        // The two tasks, once started; `ended` once the operation has (its timer then stops);
        // `cancelled` once the caller was while it waited (the operation is then cancelled too,
        // whichever of the two comes first).
        let tasks = Locked<(work: Task<Void, Never>?, timer: Task<Void, Never>?, ended: Bool, cancelled: Bool)>(
            (nil, nil, false, false))
        // The caller, taken by the first of the operation, its timer, its abandonment and the
        // caller's cancellation to end; the others find nothing to do.
        let takeCaller: @Sendable () -> CheckedContinuation<T, any Error>? = {
            outcome.withLock { pending in
                defer { pending = nil }
                return pending
            }
        }
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                outcome.withLock { $0 = continuation }
                // Unstructured, both: the operation may never end, and the caller must not wait
                // for it.
                let work = Task {
                    let result = await Result { try await body() }
                    takeCaller()?.resume(with: result)
                    tasks.withLock { tasks in
                        tasks.ended = true
                        return tasks.timer
                    }?.cancel()
                }
                // Gives the operation up (its timer fired, or its connection closed), before the
                // caller hears of it: its next try comes after.
                let giveUp: @Sendable (any Error) -> Void = { error in
                    guard let caller = takeCaller() else { return }
                    givingUp()
                    work.cancel()
                    tasks.withLock { $0.timer }?.cancel()
                    caller.resume(throwing: error)
                }
                let timerTask = Task {
                    if let timer {
                        await timer()
                    } else {
                        try? await sleepReleasingOnCancel(for: timeout, clock: ContinuousClock())
                    }
                    giveUp(TimeoutError(timeout: timeout, subject: "a PostgreSQL operation"))
                }
                let (ended, cancelled) = tasks.withLock { tasks in
                    (tasks.work, tasks.timer) = (work, timerTask)
                    return (tasks.ended, tasks.cancelled)
                }
                if ended { timerTask.cancel() }
                if cancelled { work.cancel() }
                if abandonment?.install({ giveUp(ConnectionClosedMidOperation()) }) == true {
                    giveUp(ConnectionClosedMidOperation())
                }
            }
        } onCancel: {
            // A caller cancelled before the call is not waiting yet: it runs the operation whole.
            guard let caller = takeCaller() else { return }
            tasks.withLock { tasks in
                tasks.cancelled = true
                return tasks.work
            }?.cancel()
            caller.resume(throwing: CancellationError())
        }
    }

    /// The server cannot be reached, or is shutting down or starting: worth trying again.
    static func isOutage(_ error: any Error) -> Bool {
        if isPoolCircuitBreaker(error) || error is ConnectionClosedMidOperation { return true }
        guard let error = error as? PSQLError else { return false }
        if let state = error.serverInfo?[.sqlState] {
            // 57P01–57P03: admin shutdown, crash shutdown, cannot connect now; 08xxx: connection;
            // 53300: too many connections (more workers than max_connections allows).
            return state.hasPrefix("57P") || state.hasPrefix("08") || state == "53300"
        }
        // A certificate that cannot be verified, or a TLS handshake that fails, is a setting
        // to change, not an outage to wait out.
        if let underlying = error.underlying, isTLSFailure(underlying) { return false }
        return [.connectionError, .serverClosedConnection, .clientClosedConnection, .uncleanShutdown]
            .contains(error.code)
    }

    /// SwiftNIO SSL's errors (a certificate not verified, a host it does not name, a handshake
    /// that failed), read from their description: their types are in a module OrchestraPostgres
    /// does not import.
    static func isTLSFailure(_ error: any Error) -> Bool {
        let text = "\(error)"
        return text.contains("NIOSSL") || text.contains("handshakeFailed") || text.contains("BoringSSL")
            || text.contains("CERTIFICATE_VERIFY_FAILED")
    }

    /// The client's pool refusing connections for a while after failing to open some (its
    /// circuit breaker): the server is down or takes no more connections. Read from the error's
    /// type name and description: the pool's error type is in a module PostgresNIO does not
    /// export.
    static func isPoolCircuitBreaker(_ error: any Error) -> Bool {
        String(describing: type(of: error)) == "ConnectionPoolError" && "\(error)".contains("CircuitBreaker")
    }

    /// What went wrong with a connection, in words: the system's message for the error number
    /// that SwiftNIO's errors carry (`connection refused`), rather than their description
    /// (`Connection errors: SingleConnectionFailure(target: …, error: connection reset (error
    /// set): Connection refused (errno: 111))`).
    static func networkReason(_ error: any Error) -> String {
        let text = "\(error)"
        // NIOSSL's errors, in words (their description names BoringSSL's source files).
        if text.contains("CERTIFICATE_VERIFY_FAILED") {
            return
                "its TLS certificate could not be verified (sslmode=verify-ca or verify-full: give the CA that signed it with sslrootcert=FILE)"
        }
        if text.contains("failedToValidateHostname") {
            return
                "its TLS certificate does not name this host (sslmode=verify-full; verify-ca checks only who signed it)"
        }
        if isTLSFailure(error) {
            return "the TLS handshake with it failed"
        }
        if let match = text.firstMatch(of: /errno: (\d+)/), let number = Int32(match.1) {
            return String(cString: strerror(number)).lowercased()
        }
        if text.localizedCaseInsensitiveContains("timed out") || text.localizedCaseInsensitiveContains("timeout") {
            return "no answer within \(Int(Self.connectTimeout.seconds)) s"
        }
        return text
    }

    /// A client error without a server's message, in words (PostgresNIO's description of
    /// every `PSQLError` is the same generic sentence).
    static func reason(_ code: PSQLError.Code) -> String {
        switch code {
        case .serverClosedConnection: "the server closed the connection"
        case .clientClosedConnection, .poolClosed: "the connection was closed"
        case .connectionError: "the connection failed"
        case .uncleanShutdown: "the connection ended without a clean shutdown"
        case .queryCancelled: "the query was cancelled"
        case .sslUnsupported: "it does not accept TLS (sslmode=require or verify-…: use prefer, or turn ssl on)"
        case .failedToAddSSLHandler, .receivedUnencryptedDataAfterSSLRequest: "TLS could not be set up with the server"
        case .unsupportedAuthMechanism, .saslError:
            "the server asked for an authentication this client cannot give"
        default: "the connection failed (\(code))"
        }
    }

    /// How long opening a connection may take.
    static let connectTimeout: Duration = .seconds(10)

    /// A deadlock or a serialization failure: the transaction may simply be run again.
    static func isConflict(_ error: any Error) -> Bool {
        guard let error = error as? PSQLError, let code = error.serverInfo?[.sqlState] else { return false }
        return code == "40P01" || code == "40001"
    }

    /// An error of the client or the server as a `DurableError` naming the server.
    func mapped(_ error: any Error) -> DurableError {
        Self.mapped(error, location: location)
    }

    /// An error of the client or the server as a `DurableError` naming the server at
    /// `location`.
    static func mapped(_ error: any Error, location: String) -> DurableError {
        if let error = error as? DurableError { return error }
        if error is CancellationError {
            return DurableError(code: .storeFailed, message: "cancelled", underlying: error)
        }
        if error is ConnectionClosedMidOperation {
            return DurableError(
                code: .connectionFailed,
                message: "PostgreSQL at \(location) cannot be reached: the connection closed during an operation",
                underlying: error)
        }
        if isPoolCircuitBreaker(error) {
            return DurableError(
                code: .connectionFailed,
                message:
                    "PostgreSQL at \(location) cannot be reached: no connection could be opened for a while (the server is down, or takes no more connections)",
                underlying: error)
        }
        if let error = error as? PSQLError {
            if let message = error.serverInfo?[.message] {
                let code = error.serverInfo?[.sqlState] ?? ""
                if code == "53300" {
                    return DurableError(
                        code: .storeUnreachable,
                        message:
                            "PostgreSQL at \(location) takes no more connections (\(message): its max_connections is reached by the processes connected to it)",
                        underlying: error)
                }
                // 57P01–57P03: shutting down, crashed, starting; 08xxx: the connection.
                if code.hasPrefix("57P") || code.hasPrefix("08") {
                    return DurableError(
                        code: .connectionFailed, message: "PostgreSQL at \(location) cannot be reached: \(message)",
                        underlying: error)
                }
                // 28xxx: invalid authorization; 3D000: no such database.
                if code.hasPrefix("28") || code == "3D000" {
                    return DurableError(
                        code: .connectionFailed,
                        message: "PostgreSQL at \(location) refused the connection: \(message)",
                        underlying: error)
                }
                return DurableError(
                    code: .storeFailed, message: "PostgreSQL at \(location) failed: \(message) (\(code))",
                    underlying: error)
            }
            if error.code == .authMechanismRequiresPassword {
                return DurableError(
                    code: .connectionFailed,
                    message:
                        "PostgreSQL at \(location) refused the connection: it asks for a password, and none was given (in the URL, PGPASSWORD or ~/.pgpass)",
                    underlying: error)
            }
            // A connection closed by the server's error (the server shutting down): that error.
            if let server = error.underlying as? PSQLError {
                let inner = mapped(server, location: location)
                return DurableError(code: inner.code, message: inner.message, underlying: error)
            }
            if let underlying = error.underlying {
                let failed = isTLSFailure(underlying) ? "could not be trusted" : "cannot be reached"
                return DurableError(
                    code: .connectionFailed,
                    message: "PostgreSQL at \(location) \(failed): \(networkReason(underlying))",
                    underlying: error)
            }
            return DurableError(
                code: .connectionFailed, message: "PostgreSQL at \(location) cannot be reached: \(reason(error.code))",
                underlying: error)
        }
        return DurableError(
            code: .storeFailed, message: "PostgreSQL at \(location) failed: \(error)", underlying: error)
    }
}

extension AsyncSequence {
    /// The row of a query that returns at most one, the rows read to their end.
    func onlyRow() async throws -> Element? {
        var row: Element?
        for try await element in self { row = element }
        return row
    }
}
