import OrchestraTestKit
import TestSupport
import Testing

@testable import Orchestra

/// A driver that wakes late (a busy machine: 0.3 ms a grant at 50/s made a 60-second run last
/// 60.8 s) keeps the schedule's pace, and never lets a window hold more grants than on time.
@Suite("RateLimiterStateMachine and late wake-ups", .timeLimit(.minutes(1)), .takesTurns)
struct RateLimiterLateDriverTests {
    typealias Machine = RateLimiterStateMachine<Int, String>

    static func run(rate: Rate, callers: Int, lateness: Duration) -> [Duration] {
        var machine = Machine(rate: rate, burst: 1)
        return RateLimiterStateMachineTests.run(&machine, callers: callers, lateness: lateness)
    }

    @Test func aLateWakeUpKeepsThePace() {
        // 10/s, each wake-up 3 ms late: grants at 0, then 103, 203, 303… ms, not 103, 206, 309.
        let grants = Self.run(rate: .perSecond(10), callers: 11, lateness: .milliseconds(3))
        #expect(grants.count == 11)
        #expect(grants.last == .milliseconds(1_003), "\(grants)")
        for (earlier, later) in zip(grants.dropFirst(), grants.dropFirst(2)) {
            #expect(later - earlier == .milliseconds(100), "\(grants)")
        }
    }

    /// A stall longer than a spacing is not made up in a burst: at most one spacing of credit.
    @Test(arguments: [Duration.milliseconds(99), .milliseconds(150), .milliseconds(1_000), .seconds(30)])
    func noWindowHoldsMoreThanOnTime(lateness: Duration) {
        let rate = Rate.perSecond(10)
        let grants = Self.run(rate: rate, callers: 60, lateness: lateness)
        #expect(grants.count == 60)
        // Any window of one second holds at most rate + burst = 11 grants.
        var start = 0
        for end in grants.indices {
            while grants[end] - grants[start] >= .seconds(1) { start += 1 }
            #expect(end - start + 1 <= 11, "\(grants[start]) to \(grants[end]) at lateness \(lateness)")
        }
    }
}
