/// A kind of job: a stable name, and the `Codable` types of its input and output.
///
/// Jobs are data and handlers are code: a stored run names its jobs' kinds, and whichever
/// process resumes the run finds each kind's handler by name (``DurableQueue/register(_:handler:)``).
/// Keep a kind's name, and the shape of its input and output, stable across releases: a run
/// stored by one version of an app may be resumed by the next.
///
/// ```swift
/// let resize = JobKind<ResizeRequest, ResizedImage>("resize-image")
/// ```
public struct JobKind<Input: Codable & Sendable, Output: Codable & Sendable>: Sendable, Hashable {
    /// The name runs store and handlers are found by.
    public let name: String

    /// A kind named `name`, with the given input and output types.
    public init(_ name: String, input: Input.Type = Input.self, output: Output.Type = Output.self) {
        self.name = name
    }
}

/// A job of a ``DurableGraph``, typed by its output: pass it as a dependency, and read its
/// output from a dependent's ``JobContext``.
public struct JobHandle<Output: Codable & Sendable>: Sendable, Hashable {
    /// The job's id, unique in its run.
    public let id: String

    /// A handle for job `id` whose output is an `Output`: for a handler that knows its
    /// dependencies by id (a graph built from data) rather than by the handles `add` returned.
    public init(id: String, output: Output.Type = Output.self) {
        self.id = id
    }
}
