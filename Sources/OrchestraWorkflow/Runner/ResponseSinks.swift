import Crypto
import Foundation
import Orchestra
import OrchestraHTTP

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The body of a response nothing reads (no capture, no assertion, no `--verbose`): counted and
/// dropped as it arrives, never held whole. Its first bytes are kept, for the message of a
/// status that fails the step.
final class CountingSink: HTTPResponseBodySink {
    /// The bytes kept from the start of the body.
    static let keptBytes = 4_096

    private struct State {
        var bytes = 0
        var start = Data()
    }

    private let state = Locked(State())

    func begin() throws {
        state.withLock { $0 = State() }
    }

    func write(_ part: UnsafeRawBufferPointer) throws {
        state.withLock { state in
            state.bytes += part.count
            if state.start.count < Self.keptBytes {
                state.start.append(contentsOf: part.prefix(Self.keptBytes - state.start.count))
            }
        }
    }

    /// The body's size and its first bytes.
    var counted: (bytes: Int, start: Data) { state.withLock { ($0.bytes, $0.start) } }
}

/// A response body streamed to a file (`save_to:`), hashed (SHA-256) as it is written.
///
/// The body goes to a new file beside its destination (`.NAME.orchestra-part-UUID`, created
/// with `O_EXCL | O_NOFOLLOW`, mode 0644), which ``commit()`` renames into place: a reader
/// never sees half a file, a failed download leaves the destination as it was, and a symbolic
/// link at the destination is replaced, never written through. Parent folders are made; one
/// that is a symbolic link is refused. A response sent again (a redirect, a retry) starts the
/// file over.
///
/// Hashing and writing run on a queue of the sink's own, beside the transport's thread that
/// reads the network, and the hash beside the writes: ``write(_:)`` copies the part into a 1 MiB
/// block and returns; a full block is queued to both, and the caller waits only while 8 blocks
/// are queued (8 MiB at most). A write that fails is thrown by the next call.
final class FileSink: HTTPResponseBodySink {
    /// Why a body cannot be saved, in words.
    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    private struct State {
        var descriptor: Int32 = -1
        var bytes = 0
        /// The first write that failed: every later call throws it.
        var failure: Failure?
    }

    /// The destination as the step named it (for the report).
    let path: String
    /// With a limit, the body is also kept in memory, up to it (for the step's captures and
    /// assertions): a longer body fails the request.
    let keepsUpTo: Int?
    private let kept = Locked(Data())

    /// The body kept in memory (empty without ``keepsUpTo``).
    var keptBody: Data { kept.withLock { $0 } }
    let destination: URL
    private let partial: URL
    private let state = Locked(State())
    /// Where the blocks are written, in order.
    private let queue = DispatchQueue(label: "orchestra.save-to")
    /// Where the blocks are hashed, in order, beside the writes.
    private let hashing = DispatchQueue(label: "orchestra.save-to.sha256")
    private let hasher = Locked(SHA256())
    /// Room for blocks queued and not yet written, and not yet hashed.
    private let room = DispatchSemaphore(value: FileSink.queuedBlocks)
    private let hashRoom = DispatchSemaphore(value: FileSink.queuedBlocks)
    static let queuedBlocks = 8
    static let blockSize = 1 << 20
    /// The block being filled, by the transport's calls (one at a time).
    private let filling = Locked(Data())

    /// A sink for `path` (relative to `directory`), whose folders are made now.
    ///
    /// - Throws: ``Failure`` for a path with a `..` component, a folder that is a symbolic link
    ///   or cannot be made.
    init(path: String, relativeTo directory: URL, keepingUpTo limit: Int? = nil) throws {
        self.path = path
        self.keepsUpTo = limit
        let components = path.split(separator: "/", omittingEmptySubsequences: true)
        guard !path.isEmpty, !components.isEmpty, !path.hasSuffix("/") else {
            throw Failure(description: "save_to: '\(short: path)' names no file")
        }
        guard !components.contains("..") else {
            throw Failure(
                description:
                    "save_to: '\(short: path)' has a '..' component; the files of a run stay below where it says")
        }
        guard !path.contains("\0") else { throw Failure(description: "save_to: the path holds a NUL character") }
        destination = URL(fileURLWithPath: path, relativeTo: directory).standardizedFileURL
        let folder = destination.deletingLastPathComponent()
        // The folders a relative path names must not be symbolic links: the file goes where the
        // path says.
        var walked = directory
        for component in components.dropLast() where !path.hasPrefix("/") {
            walked.appendPathComponent(String(component))
            var status = stat()
            if lstat(walked.path, &status) == 0, status.st_mode & S_IFMT == S_IFLNK {
                throw Failure(
                    description: "save_to: '\(short: path)' goes through a symbolic link (\(short: walked.path))")
            }
        }
        do {
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        } catch {
            throw Failure(
                description: "save_to: cannot make the folder \(short: folder.path): \(error.localizedDescription)")
        }
        partial = folder.appendingPathComponent(".\(destination.lastPathComponent).orchestra-part-\(UUID().uuidString)")
    }

    func begin() throws {
        kept.withLock { $0 = Data() }
        filling.withLock { $0.removeAll(keepingCapacity: true) }
        queue.sync {}
        hashing.sync {}
        hasher.withLock { $0 = SHA256() }
        try state.withLock { state in
            if let failure = state.failure { throw failure }
            if state.descriptor < 0 {
                let descriptor = open(partial.path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o644)
                guard descriptor >= 0 else {
                    throw Failure(
                        description:
                            "save_to: cannot create \(short: partial.path): \(String(cString: strerror(errno)))")
                }
                state.descriptor = descriptor
            } else {
                guard ftruncate(state.descriptor, 0) == 0, lseek(state.descriptor, 0, SEEK_SET) == 0 else {
                    throw Failure(
                        description:
                            "save_to: cannot start \(short: partial.path) over: \(String(cString: strerror(errno)))")
                }
            }
            state.bytes = 0
        }
    }

    func write(_ part: UnsafeRawBufferPointer) throws {
        if let failure = state.withLock({ $0.failure }) { throw failure }
        if let limit = keepsUpTo {
            try kept.withLock { kept in
                guard kept.count + part.count <= limit else {
                    throw Failure(
                        description:
                            "the response is larger than \(limit) bytes, the most its captures and assertions read (max_body)"
                    )
                }
                kept.append(contentsOf: part)
            }
        }
        let full = filling.withLock { block -> Data? in
            if block.isEmpty { block.reserveCapacity(Self.blockSize) }
            block.append(contentsOf: part)
            guard block.count >= Self.blockSize else { return nil }
            defer { block = Data() }
            return block
        }
        if let full { enqueue(full) }
    }

    /// Queues `data` to be hashed and written (in parallel, each in order), waiting while 8
    /// blocks wait for either.
    private func enqueue(_ data: Data) {
        hashRoom.wait()
        room.wait()
        hashing.async { [self] in
            defer { hashRoom.signal() }
            hasher.withLock { $0.update(data: data) }
        }
        queue.async { [self] in
            defer { room.signal() }
            state.withLock { state in
                guard state.failure == nil, state.descriptor >= 0 else { return }
                let written = data.withUnsafeBytes { Self.writeAll($0, to: state.descriptor) }
                guard written else {
                    state.failure = Failure(
                        description: "save_to: writing \(short: path) failed: \(String(cString: strerror(errno)))")
                    return
                }
                state.bytes += data.count
            }
        }
    }

    private static func writeAll(_ bytes: UnsafeRawBufferPointer, to descriptor: Int32) -> Bool {
        var offset = 0
        while offset < bytes.count {
            let written = Foundation.write(descriptor, bytes.baseAddress! + offset, bytes.count - offset)
            if written < 0, errno == EINTR { continue }
            guard written > 0 else { return false }
            offset += written
        }
        return true
    }

    /// Puts the file in place (an empty one if no body came) and says what was saved.
    ///
    /// - Throws: ``Failure`` when the file cannot be written or renamed.
    func commit() throws -> SavedBody {
        let last = filling.withLock { block in
            defer { block = Data() }
            return block
        }
        if !last.isEmpty { enqueue(last) }
        queue.sync {}
        hashing.sync {}
        if state.withLock({ $0.descriptor < 0 && $0.failure == nil }) { try begin() }
        return try state.withLock { state in
            let descriptor = state.descriptor
            state.descriptor = -1
            if let failure = state.failure {
                if descriptor >= 0 { close(descriptor) }
                unlink(partial.path)
                throw failure
            }
            guard close(descriptor) == 0 else {
                unlink(partial.path)
                throw Failure(
                    description: "save_to: writing \(short: path) failed: \(String(cString: strerror(errno)))")
            }
            guard rename(partial.path, destination.path) == 0 else {
                let reason = String(cString: strerror(errno))
                unlink(partial.path)
                throw Failure(description: "save_to: cannot put the file at \(short: path): \(reason)")
            }
            let digest = hasher.withLock { $0.finalize() }.map { String(format: "%02x", $0) }.joined()
            return SavedBody(path: path, bytes: state.bytes, sha256: digest)
        }
    }

    /// Removes what was written (the destination stays as it was).
    func discard() {
        filling.withLock { $0 = Data() }
        queue.sync {}
        hashing.sync {}
        state.withLock { state in
            if state.descriptor >= 0 {
                close(state.descriptor)
                state.descriptor = -1
            }
            unlink(partial.path)
        }
    }
}
