import TestSupport
import Testing

@testable import Orchestra

@Suite("Outcome table", .timeLimit(.minutes(1)), .takesTurns)
struct OutcomeTableTests {
    /// What a run keeps per node, as the types' documentation states it: a record of 56 bytes
    /// (where a `NodeOutcome` takes 120) and a scheduling state of 8.
    @Test func perNodeRecordsKeepTheirDocumentedSizes() {
        #expect(MemoryLayout<OutcomeRecord>.stride == 56)
        #expect(MemoryLayout<NodeOutcome<any Sendable>>.stride == 120)
        #expect(MemoryLayout<SchedulerStateMachine.NodeState>.stride == 8)
    }

    @Test func aNodeWithoutARecordReadsAsNeverStarted() {
        let table = OutcomeTable(count: 3)
        let record = table[1]
        #expect(record.attempts == 0)
        #expect(record.started == nil && record.ended == nil)
        guard case .cancelled = record.state else {
            Issue.record("a node without a record reads as \(record.state), not cancelled")
            return
        }
        #expect(!table.allSucceeded)
    }

    @Test func recordsBelongToTheirNodeWhateverOrderNodesEndIn() {
        var table = OutcomeTable(count: 3)
        // Nodes end in an order unrelated to their indices, and a node's record changes twice.
        table.update(2) { $0.state = .succeeded(20) }
        table.update(0) { $0.attempts = 2 }
        table.update(0) { $0.state = .timedOut(TimeoutError(timeout: .seconds(1))) }
        #expect(table[2].outcome.value as? Int == 20)
        #expect(table[0].attempts == 2)
        guard case .timedOut(let error) = table[0].state else {
            Issue.record("node 0 reads as \(table[0].state), not timed out")
            return
        }
        #expect(error.timeout == .seconds(1))
        #expect(table[1].attempts == 0, "node 1 has no record")
        #expect(!table.allSucceeded)
    }

    @Test func allSucceededNeedsARecordForEveryNodeIncludingAddedOnes() {
        var table = OutcomeTable(count: 2)
        table.update(1) { $0.state = .succeeded(1) }
        table.update(0) { $0.state = .succeeded(0) }
        #expect(table.allSucceeded)
        table.append()
        #expect(table.count == 3)
        #expect(!table.allSucceeded, "the added node has no record yet")
        table.update(2) { $0.state = .succeeded(2) }
        #expect(table.allSucceeded)
    }
}
