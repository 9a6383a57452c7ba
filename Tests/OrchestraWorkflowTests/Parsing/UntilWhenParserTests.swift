import Foundation
@_spi(Simulation) import Orchestra
import TestSupport
import Testing

@testable import OrchestraWorkflow

/// `until:` and `when:` as the parser reads them, and their mistakes with file, line and field.
@Suite("Workflow files: until and when", .timeLimit(.minutes(1)), .takesTurns)
struct UntilWhenParserTests {
    static func step(_ fields: String) -> String {
        "steps:\n  - id: a\n    url: \"http://x.test/a\"\n    captures: { role: $.role, n: $.n }\n  - id: b\n    url: \"http://x.test/b\"\n    \(fields)\n"
    }

    @Test func untilReadsAFixedIntervalABackoffAndMaxAttempts() throws {
        let fixed = try #require(try parse(Self.step("until: { interval: 2s, max_attempts: 5 }")).step("b")?.until)
        #expect(fixed.interval == .seconds(2) && fixed.maxAttempts == 5 && fixed.multiplier == 1)
        #expect(fixed.delay(after: 1) == .seconds(2) && fixed.delay(after: 40) == .seconds(2))
        let backoff = try #require(
            try parse(Self.step("until: { interval: { initial: 1s, multiplier: 2, max: 10s } }")).step("b")?.until)
        #expect((1...6).map(backoff.delay(after:)) == [1, 2, 4, 8, 10, 10].map { Duration.seconds($0) })
        #expect(backoff.delay(after: Int.max) == .seconds(10), "no overflow however many attempts")
        #expect(backoff.maxAttempts == nil)
        let defaults = try #require(try parse(Self.step("until: {}")).step("b")?.until)
        #expect(defaults.interval == .seconds(1))
        #expect(defaults.location?.line == 7)
    }

    @Test func aBackoffWithoutMaxStopsAtTheHourBound() {
        let poll = StepPoll(interval: .seconds(30), multiplier: 10)
        #expect(poll.delay(after: 100_000) == StepPoll.maximumInterval)
    }

    @Test func whenReadsComparisonsLoneValuesAndTheMappingForms() throws {
        let workflow = try parse(Self.step(#"when: "{{a.role}} == 'admin'""#))
        let b = try #require(workflow.step("b"))
        #expect(b.dependencies == ["a"], "a when: reference is a dependency like any template")
        guard case .compare(let left, .equal, let right)? = b.when?.condition else {
            Issue.record("\(String(describing: b.when))")
            return
        }
        #expect(left.source == "{{a.role}}" && right.source == "admin")
        #expect(b.when?.source == #""{{a.role}} == 'admin'""#)
        let nested = try parse(
            Self.step(#"when: { all: ["{{a.n}} >= 2", { not: { exists: "{{env.ORCHESTRA_UNSET_FOR_TEST}}" } }] }"#))
        guard case .all(let list)? = nested.step("b")?.when?.condition, list.count == 2,
            case .compare(_, .greaterOrEqual, _) = list[0], case .not(.exists) = list[1]
        else {
            Issue.record("\(String(describing: nested.step("b")?.when))")
            return
        }
        #expect(nested.step("b")?.when?.source.hasPrefix("{ all: [") == true)
        // A quoted side may hold the operator's characters.
        let quoted = try parse(Self.step(#"when: "{{a.role}} != 'a == b'""#))
        guard case .compare(_, .notEqual, let text)? = quoted.step("b")?.when?.condition else {
            Issue.record("not a comparison")
            return
        }
        #expect(text.source == "a == b")
    }

    @Test func existsMayNameAnUndefinedVariableButOtherConditionsMayNot() throws {
        _ = try parse(Self.step(#"when: { exists: "{{vars.token}}" }"#))
        let problems = errors(Self.step(#"when: "{{vars.token}} == 'x'""#))
        #expect(problems.count == 1 && problems[0].code == .unknownVariable, "\(problems)")
        #expect(problems.first?.field == "when" && problems.first?.location?.line == 7)
    }

    struct Case: Sendable, CustomStringConvertible {
        var fields: String
        var code: WorkflowError.Code
        var field: String
        var message: String
        var description: String { message }
    }

    static let cases: [Case] = [
        Case(fields: "until: 3", code: .invalidValue, field: "until", message: "must be a mapping"),
        Case(fields: "until: { tries: 3 }", code: .unknownField, field: "until.tries", message: "max_attempts"),
        Case(
            fields: "until: { max_attempts: 0 }", code: .invalidValue, field: "until.max_attempts",
            message: "must be a number of attempts ≥ 1"),
        Case(
            fields: "until: { max_attempts: 1000000 }", code: .invalidValue, field: "until.max_attempts",
            message: "at most 100000"),
        Case(fields: "until: { interval: soon }", code: .invalidValue, field: "until.interval", message: "duration"),
        Case(fields: "until: { interval: 2h }", code: .invalidValue, field: "until.interval", message: "0 to 60 min"),
        Case(
            fields: "until: { interval: { initial: 1s, multiplier: 0.5 } }", code: .invalidValue,
            field: "until.interval.multiplier", message: "from 1 to 10"),
        Case(
            fields: "until: { interval: { start: 1s } }", code: .unknownField, field: "until.interval.start",
            message: "initial"),
        Case(
            fields: "until: {}\n    save_to: out.bin", code: .invalidValue, field: "until",
            message: "save_to: would write each attempt's body"),
        Case(
            fields: "until: {}\n    paginate: { next: $.next }", code: .invalidValue, field: "until",
            message: "use one or the other"),
        Case(fields: "when: \"{{a.role}} = 'x'\"", code: .invalidValue, field: "when", message: "use == to compare"),
        Case(
            fields: "when: \"{{a.role}} == 'x' == 'y'\"", code: .invalidValue, field: "when",
            message: "one comparison per condition"),
        Case(fields: "when: \"{{a.role}} == \"", code: .invalidValue, field: "when", message: "a value on each side"),
        Case(fields: "when: \"'admin' == 'admin'\"", code: .invalidValue, field: "when", message: "never changes"),
        Case(fields: "when: \"yes\"", code: .invalidValue, field: "when", message: "has no {{…}} reference"),
        Case(fields: "when: \"{{a.role}} == 'x\"", code: .invalidValue, field: "when", message: "quote is not closed"),
        Case(
            fields: "when: \"{{a.rol}} == 'x'\"", code: .unknownCapture, field: "when", message: "did you mean 'role'"),
        Case(fields: "when: \"{{nope.x}}\"", code: .unknownStep, field: "when", message: "which does not exist"),
        Case(fields: "when: \"{{a.role\"", code: .invalidTemplate, field: "when", message: "{{"),
        Case(fields: "when: { maybe: x }", code: .unknownField, field: "when.maybe", message: "exists, not, all, any"),
        Case(
            fields: "when: { exists: \"{{a.role}}\", not: \"{{a.n}}\" }", code: .invalidValue, field: "when",
            message: "must be a condition"),
        Case(fields: "when: { all: [] }", code: .invalidValue, field: "when.all", message: "a list of 1 to 100"),
        Case(
            fields: "when: { any: [" + Array(repeating: "\"{{a.n}}\"", count: 101).joined(separator: ", ") + "] }",
            code: .invalidValue, field: "when.any", message: "a list of 1 to 100 conditions"),
        Case(fields: "when: { exists: \"token\" }", code: .invalidValue, field: "when.exists", message: "a reference"),
        Case(fields: "when: ~", code: .invalidValue, field: "when", message: "got nothing (null)"),
        Case(
            fields: "for_each: \"{{a.role}}\"\n    when: \"{{item}} == 'x'\"", code: .invalidTemplate, field: "when",
            message: "cannot use {{item}}"),
        Case(
            fields: "when: " + String(repeating: "{ not: ", count: 9) + "\"{{a.n}}\""
                + String(repeating: " }", count: 9),
            code: .invalidValue, field: "when", message: "nest at most 8 deep"),
    ]

    @Test(arguments: cases)
    func badInput(_ input: Case) throws {
        let found = errors(Self.step(input.fields))
        let error = try #require(found.first { $0.code == input.code }, "got \(found)")
        #expect(error.step == "b", "\(error)")
        #expect(error.field == input.field, "\(error)")
        #expect(error.description.contains(input.message), "\(error)")
        #expect(error.description.hasPrefix("flow.yaml:"), "\(error)")
        #expect((7...8).contains(error.location?.line ?? 0), "\(error)")
    }

    /// Random condition texts of the characters that matter (braces, quotes, operators): the
    /// splitter returns sides and an operator found in the text, a lone value, or a
    /// problem; never a crash. Seeded (`ORCHESTRA_FUZZ_SEED`), the seed printed on failure.
    @Test func randomConditionTextsSplitOrSayWhy() {
        let seed = ProcessInfo.processInfo.environment["ORCHESTRA_FUZZ_SEED"].flatMap(UInt64.init) ?? 37
        var generator = SplitMix64(seed: seed)
        let alphabet = Array("{}=!<>'\" a1")
        for _ in 0..<20_000 {
            let text = String(
                (0..<Int.random(in: 0...24, using: &generator)).map { _ in alphabet.randomElement(using: &generator)! })
            switch StepCondition.split(text) {
            case .success(let parts?):
                // A quoted side may be empty text (`{{a.b}} == ''`); an unquoted one may not.
                #expect(text.contains(parts.comparison.rawValue), "seed \(seed): \(text)")
            case .success(nil), .failure:
                break
            }
        }
    }

    /// A 1 MB condition is read in one pass (linear), and its problem quotes at most 200
    /// characters of it.
    @Test func aHugeConditionIsReadAndQuotedShort() {
        let huge = "{{a.role}} == '" + String(repeating: "x", count: 1 << 20)
        let problems = errors(Self.step("when: \"\(huge)\""))
        #expect(problems.first?.description.contains("a quote is not closed") == true)
        #expect((problems.first?.description.count ?? .max) < 1_000)
    }
}
