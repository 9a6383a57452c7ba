import Foundation

extension Workflow {
    /// The largest input file the command reads, 256 MiB: a workflow file, standard input
    /// (`-`), a `--vars-file`, a `--data` file.
    ///
    /// Why: these are read whole into memory, and `/dev/zero`, an endless pipe or a mistaken
    /// path to a disk image would otherwise be read until memory runs out. A larger file is
    /// refused with a message naming it and the limit (exit status 2), after reading at most
    /// one chunk past the limit.
    package static let defaultInputFileLimit = 256 << 20

    /// The input file limit in effect: ``defaultInputFileLimit``, or a lower number of bytes
    /// set in the environment variable `ORCHESTRA_INPUT_FILE_LIMIT` (for tests; a value above
    /// the default, or one that is not a positive number, is ignored).
    package static let inputFileLimit: Int = {
        guard let text = ProcessInfo.processInfo.environment["ORCHESTRA_INPUT_FILE_LIMIT"], let value = Int(text),
            value > 0
        else { return defaultInputFileLimit }
        return min(value, defaultInputFileLimit)
    }()

    /// `bytes` in words: `256 MB` for a whole number of MiB, `1000 bytes` otherwise.
    package static func describeSize(_ bytes: Int) -> String {
        bytes >= 1 << 20 && bytes % (1 << 20) == 0 ? "\(bytes >> 20) MB" : "\(bytes) bytes"
    }

    /// The whole content at `path`, read as a stream (a regular file, a pipe, `<(…)`, a FIFO,
    /// `/dev/stdin`, a device) in chunks, and refused past `limit` bytes: the one reading
    /// function of every input file.
    ///
    /// - Parameters:
    ///   - path: Where to read.
    ///   - file: How messages name the file.
    ///   - kind: What the file is, for the message about a directory: `workflow file`.
    ///   - limit: The most bytes accepted; ``inputFileLimit`` by default.
    /// - Throws: ``WorkflowErrors`` with code ``WorkflowError/Code/unreadable``: no such file,
    ///   a directory, unreadable, or `larger than 256 MB (the limit for an input file)`.
    package static func readInputFile(
        at path: String, file: String, kind: String = "file", limit: Int = inputFileLimit
    ) throws(WorkflowErrors) -> Data {
        func unreadable(_ reason: String) -> WorkflowErrors {
            WorkflowErrors([WorkflowError(.unreadable, reason, file: file)])
        }
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else {
            throw unreadable("no such file")
        }
        guard !isDirectory.boolValue else { throw unreadable("is a directory, not a \(kind)") }
        guard let handle = FileHandle(forReadingAtPath: path) else { throw unreadable("cannot be opened for reading") }
        defer { try? handle.close() }
        var data = Data()
        let chunk = 1 << 20
        do {
            while let part = try handle.read(upToCount: chunk), !part.isEmpty {
                guard data.count + part.count <= limit else {
                    throw unreadable(
                        "larger than \(describeSize(limit)) (the limit for an input file)")
                }
                data.append(part)
            }
        } catch let error as WorkflowErrors {
            throw error
        } catch {
            throw unreadable("cannot be read: \(error.localizedDescription)")
        }
        return data
    }
}
