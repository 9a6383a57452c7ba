import HeapModule

/// The ready nodes of a run, best first: the highest priority, then the highest key (the
/// longest remaining path, or the earliest to become ready), then the lowest node index.
///
/// Nodes of priority 0, almost always all of them, are kept apart from the others in a heap of
/// 16-byte entries, half the size of an entry that also holds the priority. A deep graph of 100k
/// nodes keeps a few thousand nodes ready at once; at 16 bytes they stay in the first-level
/// cache, and every insertion and removal sifts through them (Benchmarks/History.md, the
/// performance pass's sixth session). A node of another priority goes to a second heap, whose entries hold it,
/// and the best of the two heaps' tops is the best node: any positive priority comes before 0,
/// and 0 before any negative one.
///
/// Complexity: insertion and removal of the best node are O(log n); ``remove(_:)`` is O(n).
struct ReadyQueue: Sendable {
    /// A ready node as ``SchedulerStateMachine`` parks and restores it.
    struct Entry: Equatable, Sendable {
        var node: Int
        var priority: Int
        var key: Double
    }

    private struct Plain: Comparable, Sendable {
        var key: Double
        var node: Int

        static func < (lhs: Plain, rhs: Plain) -> Bool {
            if lhs.key != rhs.key { return lhs.key < rhs.key }
            return lhs.node > rhs.node
        }
    }

    private struct Prioritized: Comparable, Sendable {
        var priority: Int
        var key: Double
        var node: Int

        static func < (lhs: Prioritized, rhs: Prioritized) -> Bool {
            if lhs.priority != rhs.priority { return lhs.priority < rhs.priority }
            if lhs.key != rhs.key { return lhs.key < rhs.key }
            return lhs.node > rhs.node
        }
    }

    private var plain = Heap<Plain>()
    private var prioritized = Heap<Prioritized>()

    var isEmpty: Bool { plain.isEmpty && prioritized.isEmpty }

    var count: Int { plain.count + prioritized.count }

    mutating func insert(_ entry: Entry) {
        if entry.priority == 0 {
            plain.insert(Plain(key: entry.key, node: entry.node))
        } else {
            prioritized.insert(Prioritized(priority: entry.priority, key: entry.key, node: entry.node))
        }
    }

    /// Whether the best node is in ``prioritized`` rather than ``plain``.
    @inline(__always) private var bestIsPrioritized: Bool {
        guard let top = prioritized.max else { return false }
        return top.priority > 0 || plain.isEmpty
    }

    /// The best node, left in the queue.
    @inline(__always) var best: Int? {
        bestIsPrioritized ? prioritized.max?.node : plain.max?.node
    }

    /// Removes and returns the best node.
    @inline(__always) mutating func popBest() -> Entry? {
        if bestIsPrioritized {
            return prioritized.popMax().map { Entry(node: $0.node, priority: $0.priority, key: $0.key) }
        }
        return plain.popMax().map { Entry(node: $0.node, priority: 0, key: $0.key) }
    }

    /// Removes `node` if it is in the queue. Rare (cancelling a single ready node): rebuilds.
    mutating func remove(_ node: Int) {
        plain = Heap(plain.unordered.filter { $0.node != node })
        prioritized = Heap(prioritized.unordered.filter { $0.node != node })
    }

    mutating func removeAll() {
        plain = Heap()
        prioritized = Heap()
    }
}
