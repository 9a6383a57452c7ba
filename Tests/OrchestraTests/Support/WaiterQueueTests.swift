import TestSupport
import Testing

@testable import Orchestra

/// The waiter queue's rules, from its doc comment: first in, first out; any waiter can leave
/// by id; ids are never reused; tombstones left by leavers are compacted so memory stays
/// proportional to the live waiters.
@Suite("WaiterQueue", .timeLimit(.minutes(1)), .takesTurns)
struct WaiterQueueTests {
    /// Appends `names` in order, returning each one's id.
    @discardableResult
    func append(_ names: [String], to queue: inout WaiterQueue<String>) -> [UInt64] {
        names.map { name in
            let id = queue.makeID()
            queue.append(name, id: id)
            return id
        }
    }

    /// The ids the queue keeps in order, live or left behind by a removal (a private
    /// property: read by reflection, so a rename fails here rather than going unnoticed).
    func storedOrderCount(_ queue: WaiterQueue<String>) throws -> Int {
        let order = try #require(Mirror(reflecting: queue).children.first { $0.label == "order" }?.value)
        return try #require(order as? any Collection).count
    }

    @Test func waitersLeaveInTheOrderTheyCame() {
        var queue = WaiterQueue<String>()
        #expect(queue.isEmpty && queue.count == 0)
        append(["a", "b", "c"], to: &queue)
        #expect(queue.count == 3 && !queue.isEmpty)
        #expect(queue.popFirst() == "a")
        append(["d"], to: &queue)
        #expect(queue.popFirst() == "b")
        #expect(queue.popFirst() == "c")
        #expect(queue.popFirst() == "d")
        #expect(queue.popFirst() == nil)
        #expect(queue.isEmpty)
    }

    @Test func idsAreNeverReused() {
        var queue = WaiterQueue<String>()
        var seen = Set<UInt64>()
        for round in 0..<100 {
            let id = queue.makeID()
            #expect(seen.insert(id).inserted, "id \(id) handed out twice (round \(round))")
            queue.append("w\(round)", id: id)
            if round.isMultiple(of: 2) { _ = queue.popFirst() } else { _ = queue.remove(id: id) }
        }
    }

    @Test func aRemovedWaiterIsSkippedAndCanBeRemovedOnlyOnce() {
        var queue = WaiterQueue<String>()
        let ids = append(["a", "b", "c"], to: &queue)
        #expect(queue.remove(id: ids[1]) == "b")
        #expect(queue.remove(id: ids[1]) == nil, "already gone")
        #expect(queue.remove(id: 9_999) == nil, "never there")
        #expect(queue.count == 2)
        #expect(queue.popFirst() == "a")
        #expect(queue.popFirst() == "c", "the removed waiter's place is skipped")
        #expect(queue.remove(id: ids[0]) == nil, "a popped waiter cannot be removed again")
    }

    @Test func removeAllReturnsTheLiveWaitersOldestFirstAndEmptiesTheQueue() throws {
        var queue = WaiterQueue<String>()
        let ids = append(["a", "b", "c", "d"], to: &queue)
        _ = queue.remove(id: ids[2])
        #expect(queue.removeAll() == ["a", "b", "d"])
        #expect(queue.isEmpty)
        #expect(try storedOrderCount(queue) == 0)
        #expect(queue.popFirst() == nil)
    }

    /// Many cancellations and no signal: without compaction the order would keep one id per
    /// waiter that ever came (10,000 here); it must stay near the number still waiting.
    @Test func cancellationsWithoutSignalsKeepMemoryProportionalToTheLiveWaiters() throws {
        var queue = WaiterQueue<String>()
        append(["oldest"], to: &queue)
        for round in 0..<10_000 {
            let id = queue.makeID()
            queue.append("cancelled \(round)", id: id)
            #expect(queue.remove(id: id) == "cancelled \(round)")
            // A small constant, or twice the live waiters: never one per waiter that left.
            let stored = try storedOrderCount(queue)
            if stored > max(64, 2 * queue.count) {
                Issue.record("round \(round): \(stored) ids kept for \(queue.count) live waiters")
                break
            }
        }
        #expect(queue.count == 1)
        #expect(queue.popFirst() == "oldest")
    }

    @Test func compactionKeepsTheOrderOfTheWaitersLeft() throws {
        var queue = WaiterQueue<String>()
        let names = (0..<200).map { "w\($0)" }
        let ids = append(names, to: &queue)
        // Remove every waiter but one in five: several compactions happen on the way.
        for (index, id) in ids.enumerated() where !index.isMultiple(of: 5) {
            #expect(queue.remove(id: id) == names[index])
        }
        #expect(queue.count == 40)
        #expect(try storedOrderCount(queue) <= max(64, 2 * queue.count), "compacted")
        var popped: [String] = []
        while let name = queue.popFirst() { popped.append(name) }
        #expect(popped == stride(from: 0, to: 200, by: 5).map { "w\($0)" })
    }
}
