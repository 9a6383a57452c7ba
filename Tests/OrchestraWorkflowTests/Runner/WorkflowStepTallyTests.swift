import Foundation
import Orchestra
import OrchestraDurableHTTP
import OrchestraTestKit
import OrchestraWorkflow
import TestSupport
import Testing

/// The steps' figures a distributed run keeps for `orchestra status`, taken from the runner's
/// events as the run goes: the shape a state file's records give.
@Suite("WorkflowStepTally: each step's figures from the run's events", .timeLimit(.minutes(1)), .takesTurns)
struct WorkflowStepTallyTests {
    /// A list of 4; one GET per element (element 2 answers 500); a POST whose worker stopped
    /// (may have been sent); a step after the failed one (skipped); a step that succeeds.
    static let workflow = """
        limit: 1
        steps:
          - { id: list, url: "http://x.test/list", captures: { items: $.items } }
          - { id: each, for_each: "{{list.items}}", url: "http://x.test/item/{{item}}" }
          - { id: charge, method: POST, url: "http://x.test/charge", needs: [list] }
          - { id: after, url: "http://x.test/after", needs: [each] }
          - { id: ping, url: "http://x.test/ping" }
        """

    /// (step, for_each, total, succeeded, failed, may have been sent, pending)
    typealias Row = (String, Bool, Int?, Int, Int, Int, Int?)

    static func rows(_ steps: [WorkflowStateSummary.Step]) -> [String] {
        steps.map {
            "\($0.id) \($0.forEach) \($0.total.map(String.init) ?? "-") \($0.succeeded)/\($0.failed)/\($0.maybeSent) pending \($0.pending.map(String.init) ?? "-")"
        }
    }

    @Test(
        "mid-run, a for_each step's figures move with each element; at the end every step is judged as the workflow judged it"
    )
    func figuresFollowTheRun() async throws {
        let transport = ScriptedHTTPTransport { request, _ in
            switch request.path {
            case "/list": return respond(200, #"{"items":[0,1,2,3]}"#)
            case "/item/2": return respond(500)
            case "/charge": throw HTTPJobUncertainError(method: "POST", jobID: "charge", reason: "its worker stopped")
            default: return respond()
            }
        }
        let workflow = try parse(Self.workflow)
        let tally = WorkflowStepTally(workflow: workflow)
        let start = tally.figures
        #expect(
            Self.rows(start.steps) == [
                "list false - 0/0/0 pending 1", "each true - 0/0/0 pending -", "charge false - 0/0/0 pending 1",
                "after false - 0/0/0 pending 1", "ping false - 0/0/0 pending 1",
            ])
        // After each of the for_each's progress events: the elements ended so far, and the
        // step's figures then. (The elements end in any order: element 2 fails whenever it ends.)
        let midway = Locked<[(ended: Int, figures: WorkflowStateSummary.Step)]>([])
        let report = try await withHangGuard {
            await WorkflowRunner(workflow: workflow, transport: transport).run(clock: ManualClock()) { event in
                tally.observe(event)
                if case .progress("each", let finished, _, _) = event {
                    midway.withLock { $0.append((finished, tally.figures.steps[1])) }
                }
            }
        }
        #expect(!report.allSucceeded)
        let seen = midway.withLock { $0 }
        #expect(seen.map(\.ended) == [0, 1, 2, 3, 4], "once when the list is read, then once per element")
        #expect(
            seen.allSatisfy {
                $0.figures.total == 4 && $0.figures.succeeded + $0.figures.failed == $0.ended
                    && $0.figures.failed <= 1 && $0.figures.pending == 4 - $0.ended
            }, "\(seen)")
        let end = tally.figures
        #expect(
            Self.rows(end.steps) == [
                "list false - 1/0/0 pending 0", "each true 4 3/1/0 pending 0", "charge false - 0/0/1 pending 0",
                "after false - 0/0/0 pending 1", "ping false - 1/0/0 pending 0",
            ])
        #expect(end.version > start.version, "a reader can tell there is news")
        let unchanged = tally.figures.version
        tally.observe(.started(step: "ping"))
        #expect(tally.figures.version == unchanged, "a step that starts changes no figure")
    }

    @Test("a step its when: skipped, or a dependency's, has nothing to send: not pending; a step after a failure is")
    func aStepSkippedByAWhenIsNotPending() async throws {
        let workflow = try parse(
            """
            vars: { go: "no" }
            steps:
              - { id: b, url: "http://x.test/b", when: "{{vars.go}} == yes" }
              - { id: c, url: "http://x.test/c", needs: [b] }
              - { id: list, url: "http://x.test/list", captures: { items: $.items } }
              - { id: each, for_each: "{{list.items}}", url: "http://x.test/item/{{item}}", when: "{{vars.go}} == yes" }
              - { id: broken, url: "http://x.test/broken" }
              - { id: later, url: "http://x.test/later", needs: [broken] }
            """)
        let transport = ScriptedHTTPTransport { request, _ in
            switch request.path {
            case "/list": respond(200, #"{"items":[1,2]}"#)
            case "/broken": respond(500)
            default: respond()
            }
        }
        let tally = WorkflowStepTally(workflow: workflow)
        _ = try await withHangGuard {
            await WorkflowRunner(workflow: workflow, transport: transport).run(
                clock: ManualClock(), onEvent: tally.observe)
        }
        let steps = tally.figures.steps
        #expect(steps.map(\.skipped) == [true, true, false, true, false, false])
        #expect(steps.map(\.pending) == [0, 0, 0, 0, 0, 1])
        #expect(steps.map(\.isDone) == [true, true, true, true, false, false])
    }
}
