import TestSupport
import Testing

@testable import OrchestraCLI

/// When the coordinator of a distributed run says that no worker takes its requests.
@Suite("WorkerWatch: the note about a run no worker takes requests from", .takesTurns)
struct WorkerWatchTests {
    typealias Look = WorkerWatch.Look

    /// How long requests had waited at each note due over `looks` (seconds since the start).
    static func notes(_ looks: [(second: Int, look: Look)], firstNote: Duration = .seconds(30)) -> [Int] {
        var watch = WorkerWatch(firstNote: firstNote)
        return looks.compactMap { second, look in
            watch.observe(look, at: .seconds(second)).map { Int($0.components.seconds) }
        }
    }

    /// A look every 5 s, up to `seconds`.
    static func every5s(upTo seconds: Int, _ look: (Int) -> Look) -> [(second: Int, look: Look)] {
        stride(from: 5, through: seconds, by: 5).map { ($0, look($0)) }
    }

    @Test(
        "requests waiting without a claim for an hour: a note at 30 s, then each time the wait has doubled, at most 10 min apart"
    )
    func schedule() {
        let waiting = Look(waiting: 12, running: 0, ended: 0)
        #expect(
            Self.notes(Self.every5s(upTo: 3_600) { _ in waiting })
                == [30, 60, 120, 240, 480, 960, 1_560, 2_160, 2_760, 3_360])
    }

    /// Looks at which nothing is to be said.
    static func busy(_ name: String, at second: Int) -> Look {
        switch name {
        // Nothing appended yet, or everything claimed and running: nothing waits.
        case "nothing waits": Look(waiting: 0, running: 3, ended: 0)
        // A request ends every look, others wait (the run's limit is reached).
        case "requests end": Look(waiting: 50, running: 4, ended: second)
        // Requests are claimed one look, end the next.
        default: Look(waiting: 50, running: second / 5 % 2, ended: second / 10)
        }
    }

    @Test(
        "nothing is said while nothing waits, or while workers claim and end requests",
        arguments: ["nothing waits", "requests end", "requests start"])
    func quiet(_ name: String) {
        #expect(Self.notes(Self.every5s(upTo: 600) { Self.busy(name, at: $0) }).isEmpty)
    }

    @Test("a worker that claims after a note starts the count again; when all workers die, the note comes back")
    func claimsResetTheCount() {
        let waiting = Look(waiting: 10, running: 0, ended: 0)
        var looks = Self.every5s(upTo: 40) { _ in waiting }
        // A worker comes at 45 s and sends everything but 5 requests, then dies at 60 s
        // holding 2: nothing moves from then on.
        looks += [
            (45, Look(waiting: 6, running: 4, ended: 0)), (50, Look(waiting: 5, running: 3, ended: 2)),
            (55, Look(waiting: 5, running: 2, ended: 3)),
        ]
        looks += stride(from: 60, through: 120, by: 5).map { ($0, Look(waiting: 5, running: 2, ended: 3)) }
        // 30 s after the start, 30 s after the last claim (at 55 s), then 60 s after it.
        #expect(Self.notes(looks) == [30, 30, 60])
    }

    @Test(
        "the first note's delay: 30 s, or ORCHESTRA_WORKER_NOTE_AFTER (1 to 3600 s; anything else is ignored)",
        arguments: [
            (nil, 30), ("2", 2), ("3600", 3_600), ("0", 30), ("3601", 30), ("-5", 30), ("2s", 30),
            ("99999999999999999999", 30),
        ] as [(String?, Int)])
    func firstNote(value: String?, seconds: Int) {
        let environment = value.map { ["ORCHESTRA_WORKER_NOTE_AFTER": $0] } ?? [:]
        #expect(WorkerWatch.firstNote(environment: environment) == .seconds(seconds))
    }

    @Test("the note names the wait, the run, how many requests wait and the command to start")
    func note() {
        #expect(
            WorkerWatch.note(waited: .seconds(30), waiting: 12, runID: "orders", schema: "orchestra")
                == "waiting for a worker: none has claimed a request for 30 s; 12 requests of run 'orders' wait: start 'orchestra worker --state postgres://… --schema orchestra' against the same store (Ctrl-C cancels the run)"
        )
        #expect(WorkerWatch.describe(.seconds(119)) == "119 s")
        #expect(WorkerWatch.describe(.seconds(960)) == "16 min")
        let later = WorkerWatch.note(waited: .seconds(240), waiting: 1, runID: "r", schema: "s")
        #expect(later.contains("for 4 min; 1 request of run 'r' waits"), "\(later)")
    }
}
