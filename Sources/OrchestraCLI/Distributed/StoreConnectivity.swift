import OrchestraDurable
import OrchestraPostgres

/// What the commands that use a PostgreSQL store (`run --state postgres://…`, `worker`,
/// `status`) say and do when its server cannot be reached.
enum StoreConnectivity {
    /// The exit status of a command whose store could not be opened: 3 when its server could
    /// not be reached (down, starting, out of connections: trying again later may work), 2
    /// when it refused (a wrong URL, user, password, database or schema: a supervisor should
    /// not simply start the command again).
    static func exitStatus(openingFailedWith error: any Error) -> Int32 {
        (error as? DurableError)?.code == .storeUnreachable ? 3 : 2
    }

    /// Says on stderr, as `command`'s notes, when the server stops answering (once per outage,
    /// while the store keeps trying) and when it answers again.
    static func notes(_ command: String) -> @Sendable (PostgresConnectivity) -> Void {
        { event in
            switch event {
            case .unreachable(let reason):
                Console.standardError.line(
                    "\(command): note: \(TerminalText.safe(reason)); trying again until it answers")
            case .reachable(let after):
                Console.standardError.line(
                    "\(command): note: the store answers again, after \(Format.wallTime(after))")
            case .fewerConnections(let using, let asked):
                Console.standardError.line(
                    "\(command): note: the database server has fewer than \(asked) connections free (its max_connections is nearly reached): this process opens at most \(using)"
                )
            }
        }
    }
}
