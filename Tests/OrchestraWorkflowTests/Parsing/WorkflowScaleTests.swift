import OrchestraWorkflow
import TestSupport
import Testing

/// Files far larger than anyone writes by hand: checked without recursion (a 1,000-step chain
/// used to overflow the stack) and in linear time (every lookup was a linear search).
@Suite("Workflow files at scale", .timeLimit(.minutes(3)), .ownThread, .takesTurns)
struct WorkflowScaleTests {
    /// 20,000 steps: 20 times the chain that crashed, and fast enough in a debug build under
    /// ThreadSanitizer. BENCHMARKS.md times 100,000.
    static let size = 20_000

    static func file(_ count: Int, needs: (Int) -> Int?) -> String {
        var text = "steps:\n"
        text.reserveCapacity(count * 64)
        for index in 0..<count {
            let dependency = needs(index).map { ", needs: s\($0)" } ?? ""
            text += "  - { id: s\(index), url: \"http://x.test/items/\(index)\"\(dependency) }\n"
        }
        return text
    }

    @Test func aLongChainIsValid() throws {
        let workflow = try parse(Self.file(Self.size) { $0 == 0 ? nil : $0 - 1 })
        #expect(workflow.steps.count == Self.size)
        #expect(workflow.step("s\(Self.size - 1)")?.dependencies == ["s\(Self.size - 2)"])
        #expect(workflow.step("s0")?.dependencies == [])
    }

    @Test func aLongCycleIsReportedOnceWithItsEnds() throws {
        let found = errors(Self.file(Self.size) { ($0 + Self.size - 1) % Self.size })
        #expect(found.count == 1, "\(found.prefix(3))")
        let cycle = try #require(found.first)
        #expect(cycle.code == .cycle)
        #expect(cycle.message.contains("… \(Self.size - 9) more steps …"), "\(cycle.message)")
        #expect(cycle.message.count < 300, "the message names the ends, not 20,000 steps")
    }

    @Test func manyIndependentStepsAreValid() throws {
        let workflow = try parse(Self.file(Self.size) { _ in nil })
        #expect(workflow.steps.count == Self.size && workflow.steps.allSatisfy { $0.dependencies.isEmpty })
        #expect(workflow.step("s12345")?.request.url.source == "http://x.test/items/12345")
    }
}
