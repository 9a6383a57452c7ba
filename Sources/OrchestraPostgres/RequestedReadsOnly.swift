import Logging
import Orchestra
import PostgresNIO

/// The first handler of a store connection's channel: it passes on only the reads that the
/// handlers after it (PostgresNIO's) asked for, so a server that closes the connection while
/// the store reads a result slowly ends that query with an error instead of crashing the
/// process.
///
/// PostgresNIO (1.33.2, the version this package can use) reads a result with back-pressure:
/// once it has handed rows on, it holds the channel's next read until its reader wants more.
/// But a channel whose peer closed reads what is left, and reports the end of that read,
/// without being asked; PostgresNIO then stops the process (a precondition in its row
/// stream: "How can we receive a body part, after a channelReadComplete, but no read has been
/// forwarded yet"). PostgreSQL closes so when it is restarted or a backend is ended while it
/// sends a result larger than one read (jobs' inputs, outcomes' outputs): a worker died so,
/// mid-run, when its server restarted.
///
/// Here, what arrives unasked is held, and the end of its read is not passed on; a later read
/// that is asked for gets it. Such data only comes before the channel closes, so it is
/// dropped when it does (the query fails as on any lost connection, and is tried again).
/// Everything else passes unchanged.
final class RequestedReadsOnly: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer
    typealias OutboundIn = Any
    typealias OutboundOut = Any

    /// A read was asked for and not yet answered. Added to a connection at rest, which PostgresNIO
    /// always reads from (its reply to the next query must come in), so one is taken as asked.
    private var asked = true
    /// Within a read that answers one that was asked for (until its end is reported).
    private var answering = false
    /// What came unasked, in order, until a read is asked for or the channel closes.
    private var held: [NIOAny] = []

    func read(context: ChannelHandlerContext) {
        guard !held.isEmpty else {
            asked = true
            context.read()
            return
        }
        let data = held
        held = []
        for part in data { context.fireChannelRead(part) }
        context.fireChannelReadComplete()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard asked || answering else {
            held.append(data)
            return
        }
        // As the channel: a read that brought data answered the one asked for.
        asked = false
        answering = true
        context.fireChannelRead(data)
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        // With `asked` alone, the end of a read that brought nothing (the channel reports one at
        // the peer's close): the read asked for is still outstanding.
        guard answering || asked else { return }
        answering = false
        context.fireChannelReadComplete()
    }

    func channelInactive(context: ChannelHandlerContext) {
        held = []
        context.fireChannelInactive()
    }
}

extension PostgresJobStore {
    /// Puts ``RequestedReadsOnly`` first on `connection`'s channel, unless it is there already.
    ///
    /// PostgresNIO keeps a connection's channel to itself: it is read from the connection's
    /// stored properties. Were that to fail (another PostgresNIO), the connection is used as
    /// it is, and the failure logged once.
    ///
    /// - Returns: Whether the handler is on the channel.
    @discardableResult
    static func guardReads(of connection: PostgresConnection, logger: Logger) async -> Bool {
        guard let channel = Mirror(reflecting: connection).descendant("channel") as? any Channel else {
            let first = unreadableChannel.withLock { logged in
                defer { logged = true }
                return !logged
            }
            if first {
                logger.warning(
                    "PostgresNIO's connection has no channel to read: a server that closes a connection while a result is being read may stop this process"
                )
            }
            return false
        }
        let added = channel.eventLoop.submit {
            let pipeline = channel.pipeline.syncOperations
            if (try? pipeline.handler(type: RequestedReadsOnly.self)) != nil { return }
            try pipeline.addHandler(RequestedReadsOnly(), position: .first)
        }
        do {
            try await added.get()
            return true
        } catch {
            // A channel that closed meanwhile: the query that follows fails as on any lost
            // connection.
            return false
        }
    }

    /// Whether ``guardReads(of:logger:)`` logged that it could not read a channel.
    private static let unreadableChannel = Locked(false)
}
