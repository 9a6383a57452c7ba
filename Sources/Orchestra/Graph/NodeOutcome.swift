/// How one node of a run ended, with its attempts and when it ran.
public struct NodeOutcome<Value: Sendable>: Sendable, CustomStringConvertible {
    /// The terminal state of a node.
    public enum State: Sendable, CustomStringConvertible {
        /// The body returned a value.
        case succeeded(Value)
        /// The last attempt threw `error`.
        case failed(any Error)
        /// The last attempt ran out of time.
        case timedOut(TimeoutError)
        /// The node never ran because `cause` (a node id) failed, timed out, was cancelled or
        /// was skipped itself.
        case skipped(cause: String)
        /// The node or the whole run was cancelled before the node finished.
        case cancelled

        /// `succeeded`, `failed: …`, `skipped because …`.
        public var description: String {
            switch self {
            case .succeeded: "succeeded"
            case .failed(let error): "failed: \(error)"
            case .timedOut(let error): "\(error)"
            case .skipped(let cause): "skipped because \"\(cause)\" did not succeed"
            case .cancelled: "cancelled"
            }
        }
    }

    /// How the node ended.
    public var state: State
    /// The number of attempts made (0 if it never started).
    public var attempts: Int
    /// When the first attempt started, from the run's start; `nil` if it never started.
    public var started: Duration?
    /// When the node ended, from the run's start.
    public var ended: Duration?

    /// An outcome; each parameter is described by the property of the same name.
    public init(state: State, attempts: Int, started: Duration?, ended: Duration?) {
        self.state = state
        self.attempts = attempts
        self.started = started
        self.ended = ended
    }

    /// The value, if the node succeeded.
    public var value: Value? {
        if case .succeeded(let value) = state { return value }
        return nil
    }

    /// The error, if the node failed or timed out.
    public var error: (any Error)? {
        switch state {
        case .failed(let error): error
        case .timedOut(let error): error
        case .succeeded, .skipped, .cancelled: nil
        }
    }

    /// Whether the node succeeded (it has a value).
    public var succeeded: Bool { value != nil }

    /// The state's description.
    public var description: String { state.description }

    func map<Other: Sendable>(_ transform: (Value) -> Other) -> NodeOutcome<Other> {
        let mapped: NodeOutcome<Other>.State =
            switch state {
            case .succeeded(let value): .succeeded(transform(value))
            case .failed(let error): .failed(error)
            case .timedOut(let error): .timedOut(error)
            case .skipped(let cause): .skipped(cause: cause)
            case .cancelled: .cancelled
            }
        return NodeOutcome<Other>(state: mapped, attempts: attempts, started: started, ended: ended)
    }
}

/// A node's outcome as a run records it: 56 bytes instead of a `NodeOutcome`'s 120, because a
/// run keeps one per node and reads its dependencies' for every node it starts. Times are
/// whole nanoseconds from the run's start (a run's clock does not measure finer), and a
/// timeout's error is kept boxed: inline, its 56 bytes made every record 80.
struct OutcomeRecord: Sendable {
    private static let none = Int64.min

    /// `NodeOutcome.State` with the `TimeoutError` of `timedOut` in an existential (a box,
    /// made only for a node that timed out): 33 bytes instead of 57.
    private enum Stored: Sendable {
        case succeeded(any Sendable)
        case failed(any Error)
        case timedOut(any Error)
        case skipped(cause: String)
        case cancelled
    }

    private var stored = Stored.cancelled
    private var attemptCount: Int32 = 0
    private var startedNanoseconds = OutcomeRecord.none
    private var endedNanoseconds = OutcomeRecord.none

    var attempts: Int {
        get { Int(attemptCount) }
        set { attemptCount = Int32(clamping: newValue) }
    }

    var started: Duration? {
        get { Self.duration(startedNanoseconds) }
        set { startedNanoseconds = Self.nanoseconds(newValue) }
    }

    var ended: Duration? {
        get { Self.duration(endedNanoseconds) }
        set { endedNanoseconds = Self.nanoseconds(newValue) }
    }

    var hasStarted: Bool { startedNanoseconds != Self.none }

    var state: NodeOutcome<any Sendable>.State {
        get {
            switch stored {
            case .succeeded(let value): .succeeded(value)
            case .failed(let error): .failed(error)
            // Only a `TimeoutError` is ever stored here (see the setter).
            case .timedOut(let error): .timedOut(error as! TimeoutError)
            case .skipped(let cause): .skipped(cause: cause)
            case .cancelled: .cancelled
            }
        }
        set {
            stored =
                switch newValue {
                case .succeeded(let value): .succeeded(value)
                case .failed(let error): .failed(error)
                case .timedOut(let error): .timedOut(error)
                case .skipped(let cause): .skipped(cause: cause)
                case .cancelled: .cancelled
                }
        }
    }

    var outcome: NodeOutcome<any Sendable> {
        NodeOutcome(state: state, attempts: attempts, started: started, ended: ended)
    }

    var succeeded: Bool {
        if case .succeeded = stored { return true }
        return false
    }

    private static func duration(_ nanoseconds: Int64) -> Duration? {
        nanoseconds == none ? nil : .nanoseconds(nanoseconds)
    }

    private static func nanoseconds(_ duration: Duration?) -> Int64 {
        guard let duration else { return none }
        // `none` stands for "no duration": a duration as far below zero saturates just above it.
        return max(duration.saturatingNanoseconds, none + 1)
    }
}

/// Every node's ``OutcomeRecord`` in a run: records in the order nodes first needed one (a
/// node ends, or its first attempt ends), and, per node, where its record is.
///
/// In a graph too large for the cache, nodes end in an order unrelated to their indices, so a
/// record per node index written as each node ends is a cache miss per node (a 56-byte write
/// anywhere in the array). Here it is a 4-byte write into the per-node index, a fourteenth of
/// the records' size, and an append at the records' end; and nothing is written before the
/// run, where an array of empty records for every node would touch all of its memory once more.
struct OutcomeTable: Sendable {
    private static let noRecord: Int32 = -1

    /// Per node, the index of its record, or `noRecord`.
    private var slots: [Int32]
    private var records: [OutcomeRecord] = []

    init(count: Int) {
        slots = Array(repeating: Self.noRecord, count: count)
        records.reserveCapacity(count)
    }

    var count: Int { slots.count }

    /// The record of `node`; a node without one reads as never started (cancelled, no attempt).
    subscript(node: Int) -> OutcomeRecord {
        let slot = slots[node]
        return slot == Self.noRecord ? OutcomeRecord() : records[Int(slot)]
    }

    /// Room for a node added while the graph runs.
    mutating func append() {
        slots.append(Self.noRecord)
    }

    /// Changes the record of `node`, made (empty) if it has none.
    mutating func update<R>(_ node: Int, _ change: (inout OutcomeRecord) -> R) -> R {
        var slot = slots[node]
        if slot == Self.noRecord {
            slot = Int32(records.count)
            slots[node] = slot
            records.append(OutcomeRecord())
        }
        return change(&records[Int(slot)])
    }

    /// Whether every node has a record that says it succeeded.
    var allSucceeded: Bool {
        records.count == slots.count && records.allSatisfy(\.succeeded)
    }
}
