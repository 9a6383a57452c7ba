import TestSupport
import Testing

@_spi(Simulation) @testable import Orchestra

@Suite("Ready queue", .timeLimit(.minutes(1)), .takesTurns)
struct ReadyQueueTests {
    typealias Entry = ReadyQueue.Entry

    /// The order the queue must give: priority, then key, highest first; then the lowest node.
    static func comesFirst(_ lhs: Entry, _ rhs: Entry) -> Bool {
        if lhs.priority != rhs.priority { return lhs.priority > rhs.priority }
        if lhs.key != rhs.key { return lhs.key > rhs.key }
        return lhs.node < rhs.node
    }

    @Test func priorityZeroSitsBetweenPositiveAndNegativePriorities() {
        var queue = ReadyQueue()
        queue.insert(Entry(node: 0, priority: -1, key: 9))
        queue.insert(Entry(node: 1, priority: 0, key: 1))
        queue.insert(Entry(node: 2, priority: 0, key: 5))
        queue.insert(Entry(node: 3, priority: 2, key: 0))
        queue.insert(Entry(node: 4, priority: 1, key: 7))
        #expect(queue.best == 3)
        var order: [Int] = []
        while let entry = queue.popBest() { order.append(entry.node) }
        #expect(order == [3, 4, 2, 1, 0])
        #expect(queue.isEmpty)
        #expect(queue.best == nil)
    }

    @Test func equalKeysGoToTheLowestNodeInEitherHeap() {
        var queue = ReadyQueue()
        for node in [7, 3, 5] { queue.insert(Entry(node: node, priority: 0, key: 2)) }
        for node in [8, 4, 6] { queue.insert(Entry(node: node, priority: -3, key: 2)) }
        var order: [Int] = []
        while let entry = queue.popBest() { order.append(entry.node) }
        #expect(order == [3, 5, 7, 4, 6, 8])
    }

    @Test func aPoppedEntryIsTheOneInserted() {
        var queue = ReadyQueue()
        let entries = [Entry(node: 1, priority: 0, key: 2.5), Entry(node: 2, priority: 4, key: -1)]
        for entry in entries { queue.insert(entry) }
        #expect(queue.popBest() == entries[1])
        #expect(queue.popBest() == entries[0], "a priority-0 entry keeps its key")
        #expect(queue.popBest() == nil)
    }

    /// Random insertions, removals of the best and of arbitrary nodes, against a sorted array.
    @Test(arguments: [3 as UInt64, 77, 2024])
    func randomOperationsMatchASortedReference(seed: UInt64) {
        var generator = SplitMix64(seed: seed)
        var queue = ReadyQueue()
        var reference: [Entry] = []
        var nextNode = 0
        for step in 0..<3000 {
            switch Int.random(in: 0..<10, using: &generator) {
            case 0..<6:
                // Few distinct priorities and keys, so that ties are common.
                let entry = Entry(
                    node: nextNode,
                    priority: Int.random(in: 0..<3, using: &generator) == 0
                        ? Int.random(in: -2...2, using: &generator) : 0,
                    key: Double(Int.random(in: 0...4, using: &generator)))
                nextNode += 1
                queue.insert(entry)
                reference.append(entry)
            case 6..<9:
                reference.sort(by: Self.comesFirst)
                #expect(queue.best == reference.first?.node, "seed \(seed), step \(step)")
                #expect(
                    queue.popBest() == (reference.isEmpty ? nil : reference.removeFirst()), "seed \(seed), step \(step)"
                )
            default:
                guard let victim = reference.randomElement(using: &generator) else { continue }
                queue.remove(victim.node)
                reference.removeAll { $0.node == victim.node }
            }
            #expect(queue.count == reference.count, "seed \(seed), step \(step)")
        }
        reference.sort(by: Self.comesFirst)
        var rest: [Entry] = []
        while let entry = queue.popBest() { rest.append(entry) }
        #expect(rest == reference, "seed \(seed)")
    }
}
