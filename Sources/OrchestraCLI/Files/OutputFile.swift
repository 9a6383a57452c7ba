#if canImport(Darwin)
import Darwin
#elseif canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// How `orchestra` writes every file it produces (`--report-junit`, `--report-html`,
/// `--cookie-jar`, the `--trace` files): whole or not at all, never through a symlink.
///
/// The rule: the content goes into a new file in the same folder (created with `O_EXCL`, so
/// nothing planted there is opened), which is then renamed over the final path. *Why:* a
/// reader never sees half a file, a failed write leaves the old file as it was, and a
/// symlink planted at the final path is replaced instead of followed, so a run cannot be
/// made to overwrite another file. *If you break it* (open the final path for writing): a
/// symlink in a shared folder redirects the write to any file the user may write.
///
/// A new file gets `newFileMode` less the umask (`0o666` for reports: usually 0644;
/// `0o600` for a file that holds credentials, such as the cookie jar); an existing file keeps
/// its mode.
///
/// A stream is written as it is, not replaced: a path in `/dev/` or `/proc/self/fd/` as given
/// (`/dev/stdout`, `/dev/fd/63` of a `>(…)`), and a FIFO or character device found at the path
/// itself. Replacing `/dev/stdout` would replace the system's symlink (when run as root); a
/// symlink elsewhere is still replaced, whatever it points to.
///
/// ```swift
/// try OutputFile.write("<testsuites/>", to: "report.xml")
/// if let problem = OutputFile.problem(writing: "out/report.html") { print(problem) }  // before the run
/// ```
enum OutputFile {
    /// Why a file could not be written: ``reason`` says why, in words
    /// (`the folder '/nope' does not exist`, `No space left on device`).
    struct Failure: Error, Sendable, CustomStringConvertible {
        var path: String
        var reason: String
        var description: String { "cannot write '\(TerminalText.quoted(path))': \(reason)" }
    }

    /// Writes `text` (as UTF-8) to `path`: into a new file of the same folder, then renamed
    /// over `path`.
    ///
    /// - Parameter newFileMode: The mode of a new file, less the umask; an existing regular
    ///   file keeps its own.
    /// - Throws: ``Failure``; `path` is then unchanged and no temporary file is left.
    static func write(_ text: String, to path: String, newFileMode: mode_t = 0o666) throws(Failure) {
        if isStream(path) {
            let descriptor = open(path, O_WRONLY | O_CLOEXEC)
            guard descriptor >= 0 else { throw Failure(path: path, reason: describe(errno)) }
            let error = writeAll(text, to: descriptor)
            guard close(descriptor) == 0 || error != nil else { throw Failure(path: path, reason: describe(errno)) }
            if let error { throw Failure(path: path, reason: describe(error)) }
            return
        }
        let (folder, name) = split(path)
        guard !name.isEmpty else { throw Failure(path: path, reason: "the path names a folder") }
        var keptMode: mode_t?
        var status = stat()
        if lstat(path, &status) == 0 {
            switch status.st_mode & S_IFMT {
            case S_IFDIR: throw Failure(path: path, reason: "it is a folder")
            case S_IFREG: keptMode = status.st_mode & 0o777
            default: break  // A symlink (replaced, not followed), a FIFO or a device: a new file.
            }
        }
        let (descriptor, temporary) = try create(in: folder, for: path, mode: newFileMode)
        func fail(_ reason: String) -> Failure {
            unlink(temporary)
            return Failure(path: path, reason: reason)
        }
        if let keptMode, fchmod(descriptor, keptMode) != 0 {
            let reason = describe(errno)
            close(descriptor)
            throw fail(reason)
        }
        if let error = writeAll(text, to: descriptor) ?? (fsync(descriptor) == 0 ? nil : errno) {
            close(descriptor)
            throw fail(describe(error))
        }
        guard close(descriptor) == 0 else { throw fail(describe(errno)) }
        guard rename(temporary, path) == 0 else { throw fail(describe(errno, folder: folder)) }
    }

    /// Why `path` could not be written, checked before a run so that a bad path is refused
    /// before anything is sent; `nil` when it can be. Creates and removes a file in its folder,
    /// as ``write(_:to:newFileMode:)`` will: a missing folder, a folder without write
    /// permission, a read-only file system or a folder at `path` are all found.
    static func problem(writing path: String) -> String? {
        guard !path.isEmpty else { return "no file name was given" }
        if isStream(path) { return access(path, W_OK) == 0 ? nil : describe(errno) }
        let (folder, name) = split(path)
        guard !name.isEmpty else { return "the path names a folder" }
        var status = stat()
        if lstat(path, &status) == 0, status.st_mode & S_IFMT == S_IFDIR { return "it is a folder" }
        do {
            let (descriptor, temporary) = try create(in: folder, for: path, mode: 0o600)
            close(descriptor)
            unlink(temporary)
            return nil
        } catch {
            return error.reason
        }
    }

    /// Whether `path` is written as a stream rather than replaced (see ``OutputFile``).
    private static func isStream(_ path: String) -> Bool {
        if path.hasPrefix("/dev/") || path.hasPrefix("/proc/self/fd/") { return true }
        var status = stat()
        guard lstat(path, &status) == 0 else { return false }
        return status.st_mode & S_IFMT == S_IFIFO || status.st_mode & S_IFMT == S_IFCHR
    }

    /// `path`'s folder (`.` for a bare name) and last component (empty when `path` ends with `/`).
    private static func split(_ path: String) -> (folder: String, name: String) {
        guard let slash = path.lastIndex(of: "/") else { return (".", path) }
        let folder = path[..<slash]
        return (folder.isEmpty ? "/" : String(folder), String(path[path.index(after: slash)...]))
    }

    /// A new, empty file in `folder`, named `.orchestra-<random>.tmp`, opened for writing.
    private static func create(
        in folder: String, for path: String, mode: mode_t
    ) throws(Failure) -> (descriptor: Int32, path: String) {
        let prefix = folder.hasSuffix("/") ? folder : folder + "/"
        var attempts = 0
        while true {
            let temporary = prefix + ".orchestra-\(String(UInt64.random(in: 0...UInt64.max), radix: 36)).tmp"
            let descriptor = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode)
            if descriptor >= 0 { return (descriptor, temporary) }
            let error = errno
            attempts += 1
            if error == EINTR || (error == EEXIST && attempts < 100) { continue }
            throw Failure(path: path, reason: describe(error, folder: folder))
        }
    }

    /// `errno` in words, the folder named where it is the folder that is wrong.
    private static func describe(_ error: Int32, folder: String? = nil) -> String {
        if let folder {
            let shown = "'\(TerminalText.quoted(folder))'"
            switch error {
            case ENOENT: return "the folder \(shown) does not exist"
            case ENOTDIR: return "\(shown) is not a folder"
            case EACCES, EPERM: return "no permission to create a file in the folder \(shown)"
            default: break
            }
        }
        return String(cString: strerror(error))
    }
}

/// `write(2)` until all of `text` is written (a pipe may take fewer bytes than offered, a
/// signal may interrupt, a non-blocking descriptor may ask to wait); the `errno` of the
/// failure that stopped it, if one did. Every write of the command goes through it: standard
/// output and error (``Console``) and the files (``OutputFile``).
func writeAll(_ text: String, to descriptor: Int32) -> Int32? {
    var text = text
    return text.withUTF8 { bytes -> Int32? in
        guard var cursor = bytes.baseAddress else { return nil }
        var remaining = bytes.count
        while remaining > 0 {
            let written = write(descriptor, cursor, remaining)
            if written < 0 {
                let error = errno
                if error == EINTR { continue }
                if error == EAGAIN || error == EWOULDBLOCK {
                    var ready = pollfd(fd: descriptor, events: Int16(POLLOUT), revents: 0)
                    _ = poll(&ready, 1, -1)
                    continue
                }
                return error
            }
            if written == 0 { return EIO }
            cursor += written
            remaining -= written
        }
        return nil
    }
}
