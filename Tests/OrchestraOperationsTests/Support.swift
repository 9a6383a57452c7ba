import Foundation
import Orchestra
@testable import OrchestraOperations
import OrchestraTestKit

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

/// Runs a blocking call on its own thread and resumes when it returns, so a test can await
/// `waitUntilAllOperationsAreFinished()` under a hang guard.
func onThread(_ work: @escaping @Sendable () -> Void) async {
    await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
        Thread.detachNewThread {
            work()
            continuation.resume()
        }
    }
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
