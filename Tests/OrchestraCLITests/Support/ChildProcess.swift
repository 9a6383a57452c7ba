import Foundation
import Orchestra

#if canImport(Darwin)
import Darwin
#elseif canImport(Glibc)
import Glibc
#endif

/// A program started the way a shell on a terminal starts a command: every signal at its
/// default disposition and none blocked, standard input `/dev/null` (or a pipe this process
/// writes to), standard output and error on pipes this process reads.
///
/// Why not Foundation's `Process`: on Linux it passes on this process's signal dispositions and
/// its calling thread's signal mask. A background job of a non-interactive shell (CI, a
/// script) starts with SIGINT ignored, and its children inherit that, so a test of Ctrl-C
/// through `Process` would not drive the command the way a terminal does. `posix_spawn` with
/// `POSIX_SPAWN_SETSIGDEF` (every signal) and `POSIX_SPAWN_SETSIGMASK` (an empty mask) gives
/// the child a clean start; no other descriptor of this process leaks into it.
final class ChildProcess: Sendable {
    let pid: pid_t
    /// The raw wait status, once the child has ended.
    private let ended = Watched<Int32?>(nil)
    let standardOutput: OutputPipe
    let standardError: OutputPipe
    /// The writing end of the child's standard input, when it was asked for; `-1` otherwise.
    private let input: Int32

    /// Starts `executable` with `arguments` and `environment` (the whole environment).
    ///
    /// - Parameter readsOutput: Whether standard output is read from the start; with `false`
    ///   it is left unread until ``OutputPipe/startReading()``, so a child that writes more than
    ///   a pipe holds blocks in `write`.
    /// - Parameter writesInput: Whether standard input is a pipe for ``write(_:)`` rather than
    ///   `/dev/null`.
    init(
        executable: URL, arguments: [String], environment: [String: String], readsOutput: Bool = true,
        writesInput: Bool = false
    ) throws {
        let started = try Self.spawning.withLock { count in
            defer { count += 1 }
            return try Self.spawn(
                executable: executable, arguments: arguments, environment: environment, writesInput: writesInput)
        }
        pid = started.pid
        input = started.input
        standardOutput = OutputPipe(started.output)
        standardError = OutputPipe(started.errors)
        standardError.startReading()
        if readsOutput { standardOutput.startReading() }

        let (ended, child) = (ended, pid)
        Thread.detachNewThread {
            // Blocks until the child ends: a test that gives up on it kills it first.
            var status: Int32 = 0
            while waitpid(child, &status, 0) == -1 {
                if errno != EINTR {
                    status = -1
                    break
                }
            }
            ended.update { $0 = status }
        }
    }

    /// One child at a time is given its pipes and started: another child started between a
    /// `pipe` and its `FD_CLOEXEC` would hold a copy of a write end, and that pipe would not
    /// reach its end until that child ended too. (Glibc's `pipe2` and
    /// `posix_spawn_file_actions_addclosefrom_np` are not visible to Swift.) The state is a
    /// count of children started: a `Locked(())` has a state of no size, at the address of the
    /// lock's own pointer, and ThreadSanitizer then reports `withLock`'s access to it as a race.
    private static let spawning = Locked(0)

    /// Starts the child; returns its id and this side's ends of its pipes (`input` is `-1`
    /// without `writesInput`).
    private static func spawn(
        executable: URL, arguments: [String], environment: [String: String], writesInput: Bool
    ) throws -> (pid: pid_t, output: Int32, errors: Int32, input: Int32) {
        let output = try makePipe()
        let errors = try makePipe()
        let input = writesInput ? try makePipe() : nil

        #if canImport(Darwin)
        var actions: posix_spawn_file_actions_t? = nil
        var attributes: posix_spawnattr_t? = nil
        #else
        var actions = posix_spawn_file_actions_t()
        var attributes = posix_spawnattr_t()
        #endif
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }

        if let input {
            posix_spawn_file_actions_adddup2(&actions, input.read, 0)
        } else {
            posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        }
        posix_spawn_file_actions_adddup2(&actions, output.write, 1)
        posix_spawn_file_actions_adddup2(&actions, errors.write, 2)
        var flags = Int32(POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK)
        #if canImport(Darwin)
        flags |= Int32(POSIX_SPAWN_CLOEXEC_DEFAULT)
        #endif
        var everySignal = sigset_t()
        sigfillset(&everySignal)
        posix_spawnattr_setsigdefault(&attributes, &everySignal)
        var noSignal = sigset_t()
        sigemptyset(&noSignal)
        posix_spawnattr_setsigmask(&attributes, &noSignal)
        posix_spawnattr_setflags(&attributes, Int16(flags))

        let argv = ([executable.path] + arguments).map { strdup($0) } + [nil]
        let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { for pointer in argv + envp { free(pointer) } }
        var pid = pid_t()
        let failure = posix_spawn(&pid, executable.path, &actions, &attributes, argv, envp)
        close(output.write)
        close(errors.write)
        if let input { close(input.read) }
        guard failure == 0 else {
            close(output.read)
            close(errors.read)
            if let input { close(input.write) }
            throw POSIXError(POSIXErrorCode(rawValue: failure) ?? .EIO)
        }
        return (pid, output.read, errors.read, input?.write ?? -1)
    }

    /// A pipe whose ends close when this process execs or spawns anything else.
    private static func makePipe() throws -> (read: Int32, write: Int32) {
        var descriptors: [Int32] = [-1, -1]
        guard pipe(&descriptors) == 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
        for descriptor in descriptors { _ = fcntl(descriptor, F_SETFD, FD_CLOEXEC) }
        return (descriptors[0], descriptors[1])
    }

    /// Writes `text` to the child's standard input (see `writesInput`).
    func write(_ text: String) {
        precondition(input >= 0, "ChildProcess: started without writesInput")
        var text = text
        text.withUTF8 { bytes in
            var offset = 0
            while offset < bytes.count {
                let written = writeToDescriptor(input, bytes.baseAddress! + offset, bytes.count - offset)
                if written < 0, errno == EINTR { continue }
                guard written > 0 else { return }
                offset += written
            }
        }
    }

    deinit {
        if input >= 0 { close(input) }
    }

    /// Sends `signal` (`SIGINT`, `SIGTERM`, `SIGKILL`…) to the child.
    func send(_ signal: Int32) {
        kill(pid, signal)
    }

    /// The exit status, or minus the signal's number if a signal ended the child; `nil` if it
    /// has not ended within `limit` of real time.
    func exitStatus(within limit: Duration) async -> Int32? {
        guard await ended.wait(until: { $0 != nil }, limit: limit), let status = ended.value else { return nil }
        if status == -1 { return -1 }
        let signal = status & 0x7F
        return signal == 0 ? (status >> 8) & 0xFF : -signal
    }
}

/// One of a child's output pipes, read to its end on a thread of its own.
final class OutputPipe: Sendable {
    private let descriptor: Int32
    private let contents = Watched((data: Data(), atEnd: false, reading: false))

    init(_ descriptor: Int32) {
        self.descriptor = descriptor
    }

    /// Starts reading, once: until the child closes its end (it has ended, or was killed).
    func startReading() {
        var starts = false
        contents.update { contents in
            starts = !contents.reading
            contents.reading = true
        }
        guard starts else { return }
        let (descriptor, contents) = (descriptor, contents)
        Thread.detachNewThread {
            var buffer = [UInt8](repeating: 0, count: 64 << 10)
            while true {
                let count = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
                if count < 0, errno == EINTR { continue }
                guard count > 0 else { break }
                contents.update { $0.data.append(contentsOf: buffer[..<count]) }
            }
            close(descriptor)
            contents.update { $0.atEnd = true }
        }
    }

    /// What was read so far, as text.
    var text: String {
        String(decoding: contents.value.data, as: UTF8.self)
    }

    /// Whether `text` appeared within `limit` of real time.
    func wait(for text: String, limit: Duration) async -> Bool {
        await contents.wait(until: { String(decoding: $0.data, as: UTF8.self).contains(text) }, limit: limit)
    }

    /// Everything, once the pipe is read to its end (bounded: called once the child has ended
    /// or been killed, when its end of the pipe is closed).
    func all(limit: Duration = .seconds(30)) async -> String {
        startReading()
        _ = await contents.wait(until: { $0.atEnd }, limit: limit)
        return text
    }
}

/// write(2), under a name that ``ChildProcess/write(_:)`` does not hide.
private func writeToDescriptor(_ descriptor: Int32, _ bytes: UnsafeRawPointer, _ count: Int) -> Int {
    write(descriptor, bytes, count)
}
