import Foundation
@_spi(Simulation) import Orchestra
import TestSupport
import Testing
import Yams

@testable import OrchestraWorkflow

/// Random YAML, mutated from the examples, fed to the parser and checker for a fixed budget:
/// every input gives a workflow or errors that name a line; none crashes or hangs (the suite's
/// time limit catches a hang, a crash ends the test process).
///
/// Seeded: a failing input is printed with its seed, and `ORCHESTRA_FUZZ_SEED=…` replays it.
@Suite("Workflow fuzzing", .timeLimit(.minutes(3)), .ownThread, .takesTurns)
struct WorkflowFuzzTests {
    /// Time spent mutating and parsing (whatever the machine), and at most this many inputs.
    static let budget: Duration = .seconds(15)
    static let maxInputs = 20_000

    static let corpus: [String] = {
        let examples = URL(filePath: #filePath).deletingLastPathComponent().appending(path: "../../Examples")
        let files = (try? FileManager.default.contentsOfDirectory(at: examples, includingPropertiesForKeys: nil)) ?? []
        let texts = files.filter { $0.pathExtension == "yaml" }.sorted { $0.path < $1.path }.compactMap {
            try? String(contentsOf: $0, encoding: .utf8)
        }
        return texts + [WorkflowParserTests.full, "steps:\n  - id: a\n    url: \"http://x.test\"\n"]
    }()

    /// Values that have broken parsers: empty, YAML types, huge numbers, templates half
    /// written, anchors and aliases, control and bidi characters, long text.
    static let scalars = [
        "", "~", "null", "true", "yes", "0", "-1", "1e400", "0x1F", "99999999999999999999", ".inf", "1:30", "0.5s",
        "1e10",
        "\"{{vars.base}}\"", "\"{{\"", "\"}}\"", "\"{{a.b}}\"", "\"{{item}}\"", "{{x}}", "&a x", "*a", "&b [1, 2]",
        "*b", "!!str 1",
        "[", "]", "{", "}", "[[[[1]]]]", "{a: {b: {c: 1}}}", "- x", ": x", "\"\\u202E\"", "\"\\e[31m\"", "\"\\0\"",
        "\t",
        "\"http://x.test:99999/\"", "\"file:///etc/passwd\"", "\"http://[::1\"", "'it''s'", "|\n  text", ">", "@", "`",
        "%",
        String(repeating: "x", count: 5_000),
    ]

    @Test func randomMutationsGiveAWorkflowOrErrorsWithLines() throws {
        let base = ProcessInfo.processInfo.environment["ORCHESTRA_FUZZ_SEED"].flatMap(UInt64.init) ?? 2026
        let clock = ContinuousClock()
        let start = clock.now
        var inputs = 0
        var valid = 0
        while inputs < Self.maxInputs, clock.now - start < Self.budget {
            let seed = base &+ UInt64(inputs)
            var generator = SplitMix64(seed: seed)
            let text = Self.mutated(Self.corpus.randomElement(using: &generator)!, using: &generator)
            inputs += 1
            let lineCount = text.split(separator: "\n", omittingEmptySubsequences: false).count
            do {
                let workflow = try Workflow.parse(text, file: "fuzz.yaml")
                #expect(!workflow.steps.isEmpty, "seed \(seed): a workflow without steps\n\(Self.shown(text))")
                valid += 1
            } catch {
                #expect(!error.errors.isEmpty, "seed \(seed): errors without an error")
                for problem in error.errors {
                    let line = problem.location?.line
                    // Only an empty document has no line to name.
                    let named = line.map { (1...lineCount + 1).contains($0) } ?? (problem.code == .missingField)
                    #expect(named, "seed \(seed): \(problem) names no line of the file\n\(Self.shown(text))")
                    #expect(
                        problem.message.count < 2_000,
                        "seed \(seed): a message of \(problem.message.count) characters: \(problem.message.prefix(300))"
                    )
                }
            }
        }
        #expect(inputs >= 100, "the budget ran at least 100 inputs")
        #expect(valid > 0 && valid < inputs, "the mutations reach both outcomes (\(valid) of \(inputs) valid)")
    }

    /// The composer builds the tree Yams builds (values, tags, styles, lines and columns), and
    /// refuses what Yams refuses, on the same random inputs. (A list's or mapping's style is
    /// not compared: the parser does not read it.)
    @Test func theComposerAgreesWithYams() throws {
        let clock = ContinuousClock()
        let start = clock.now
        var inputs = 0
        var compared = 0
        while inputs < Self.maxInputs, clock.now - start < .seconds(5) {
            let seed = 7_000 &+ UInt64(inputs)
            var generator = SplitMix64(seed: seed)
            let text = Self.mutated(Self.corpus.randomElement(using: &generator)!, using: &generator)
            inputs += 1
            let expected = Result { try Yams.compose(yaml: text, .basic) }
            switch (YAMLComposer.compose(text), expected) {
            case (.document(let node), .success(let yams)):
                compared += 1
                let same = Self.same(node, yams)
                #expect(same, "seed \(seed): the trees differ\n\(Self.shown(text))")
            case (.syntaxError, .failure), (.problems, .failure(YamlError.duplicatedKeysInMapping)):
                continue
            case (.problems(let problems), .success):
                // Only a key written twice in different forms ("a" and a) is a duplicate to
                // the composer alone; an alias bomb is not made by these mutations.
                #expect(problems.allSatisfy { $0.message.contains("given twice") }, "seed \(seed): \(problems)")
            case (let outcome, let yams):
                Issue.record(
                    "seed \(seed): the composer and Yams disagree (\(String(describing: outcome).prefix(200)); \(String(describing: yams).prefix(200)))\n\(Self.shown(text))"
                )
            }
        }
        #expect(compared >= 50, "the sample reaches both composers' trees (\(compared) of \(inputs))")
    }

    /// Whether the composer's tree has Yams' nodes: values, tags, scalar styles and places.
    static func same(_ a: YAMLNode?, _ b: Yams.Node?) -> Bool {
        var pairs: [(YAMLNode?, Yams.Node?)] = [(a, b)]
        while let (a, b) = pairs.popLast() {
            switch (a, b) {
            case (nil, nil): continue
            case (.scalar(let x)?, .scalar(let y)?):
                guard x.string == y.string, x.style == y.style, x.tag.rawValue == y.tag.rawValue,
                    sameMark(x.mark, y.mark)
                else { return false }
            case (.sequence(let x)?, .sequence(let y)?):
                guard x.count == y.count, x.tag.rawValue == y.tag.rawValue, sameMark(x.mark, y.mark) else {
                    return false
                }
                pairs += zip(x, y).map { (Optional.some($0), Optional.some($1)) }
            case (.mapping(let x)?, .mapping(let y)?):
                guard x.count == y.count, x.tag.rawValue == y.tag.rawValue, sameMark(x.mark, y.mark) else {
                    return false
                }
                for (p, q) in zip(x, y) { pairs += [(p.key, q.key), (p.value, q.value)] }
            default:
                return false
            }
        }
        return true
    }

    static func sameMark(_ a: OrchestraWorkflow.SourceLocation?, _ b: Mark?) -> Bool {
        a?.line == b?.line && a?.column == b?.column
    }

    /// One to four mutations of `text`'s lines.
    static func mutated(_ text: String, using generator: inout SplitMix64) -> String {
        var lines = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        for _ in 0..<Int.random(in: 1...4, using: &generator) {
            guard !lines.isEmpty else { break }
            let at = Int.random(in: lines.indices, using: &generator)
            switch Int.random(in: 0..<8, using: &generator) {
            case 0:
                lines.remove(at: at)
            case 1:
                lines.insert(lines[at], at: at)  // a duplicated key or list entry
            case 2:
                lines.swapAt(at, Int.random(in: lines.indices, using: &generator))
            case 3:
                // A value replaced by a random scalar.
                if let colon = lines[at].firstIndex(of: ":") {
                    lines[at] = String(lines[at][...colon]) + " " + scalars.randomElement(using: &generator)!
                }
            case 4:
                // A random scalar inserted as a line of its own, at the line's indentation.
                let indent = lines[at].prefix { $0 == " " }
                lines.insert(indent + scalars.randomElement(using: &generator)!, at: at)
            case 5:
                // Deep nesting.
                let depth = Int.random(in: 1...3_000, using: &generator)
                let indent = lines[at].prefix { $0 == " " }
                lines.insert(
                    indent + "body: " + String(repeating: "[", count: depth) + "1"
                        + String(repeating: "]", count: depth), at: at)
            case 6:
                // An anchor on one value, aliases of it elsewhere.
                if let colon = lines[at].firstIndex(of: ":") {
                    lines[at] = String(lines[at][...colon]) + " &z" + lines[at][lines[at].index(after: colon)...]
                    let other = Int.random(in: lines.indices, using: &generator)
                    if let otherColon = lines[other].firstIndex(of: ":") {
                        lines[other] = String(lines[other][...otherColon]) + " [*z, *z, *z]"
                    }
                }
            default:
                // A character removed or a stray one inserted.
                var characters = Array(lines[at])
                if characters.isEmpty || Bool.random(using: &generator) {
                    characters.insert(
                        ["\"", "'", "{", "[", ":", "-", "#", "\t", "&", "*", "\u{202E}", "\u{1B}"].randomElement(
                            using: &generator)!,
                        at: Int.random(in: 0...characters.count, using: &generator))
                } else {
                    characters.remove(at: Int.random(in: characters.indices, using: &generator))
                }
                lines[at] = String(characters)
            }
        }
        return lines.joined(separator: "\n")
    }

    static func shown(_ text: String) -> String {
        text.count > 2_000 ? String(text.prefix(2_000)) + "…" : text
    }
}
