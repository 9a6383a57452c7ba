import Foundation
import Orchestra
import OrchestraTestKit

@testable import OrchestraOperations

/// An asynchronous operation the test finishes by hand, logging its start and finish.
final class ManualOperation: AsyncOperation, @unchecked Sendable {
    let log: EventLog<String>

    init(_ name: String, log: EventLog<String>) {
        self.log = log
        super.init()
        self.name = name
    }

    override func execute() {
        log.append("start \(name!)")
    }

    func complete() {
        log.append("finish \(name!)")
        finish()
    }
}

/// Collects diagnostics reported by an operation.
final class DiagnosticsRecorder: Sendable {
    let log = EventLog<OrchestraDiagnostic>()
    var handler: DiagnosticsHandler { DiagnosticsHandler { [log] in log.append($0) } }
}

/// Waits until `queue.waitUntilAllOperationsAreFinished()` returns, called on its own thread,
/// and gives up after `limit` (real time) with ``NeverHappened``: a queue that never drains
/// fails the test in seconds. (The blocking call ignores cancellation, so a hang guard around
/// it could never fire: the guard waits for its body.) A thread left blocked by a failure is
/// leaked; the test has failed anyway.
func waitUntilAllOperationsAreFinished(_ queue: OperationQueue, guard limit: Duration = .seconds(10)) async throws {
    let returned = EventLog<Bool>()
    Thread.detachNewThread {
        queue.waitUntilAllOperationsAreFinished()
        returned.append(true)
    }
    try await waitUntil("the queue's operations all finished", guard: limit) { returned.count == 1 }
}

struct TestError: Error, Equatable {
    var name: String
    init(_ name: String) { self.name = name }
}

extension OperationQueue {
    /// `addOperations(_:waitUntilFinished: false)`, which Foundation marks unavailable from
    /// async code because of its blocking variant.
    func enqueue(_ operations: [Operation]) {
        addOperations(operations, waitUntilFinished: false)
    }
}
