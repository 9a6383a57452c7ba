@_spi(Simulation) import Orchestra
import OrchestraTestKit
import TestSupport
import Testing
import Yams

@testable import OrchestraWorkflow

/// Plain scalars are typed without Yams' regular expressions, by the same rules: every case
/// and random text agree with `Resolver.default` (its timestamps and `<<`/`=` are text here).
@Suite("YAML scalar types", .timeLimit(.minutes(3)), .ownThread, .takesTurns)
struct YAMLScalarTypeTests {
    static func expected(_ text: String) -> Yams.Tag.Name {
        let tag = Resolver.default.resolveTag(of: Yams.Node(text))
        return [.null, .bool, .int, .float].contains(tag) ? tag : .str
    }

    @Test(arguments: [
        "", "~", "null", "Null", "NULL", "nULL", "yes", "No", "ON", "off", "true", "tRUE", "y",
        "0", "00", "07", "08", "09", "0_7", "0o17", "0o", "0o8", "0b", "0b101", "0b102", "-0b1", "0x", "0x1F", "+0xfF_",
        "1", "-1", "+12_345", "1:30", "1:30:59", "1:60", "1:5", "1:", "190:20:30", "0:30",
        "1.", "1.5", "-1.5e+10", "1e5", "1E-5", "1e", "1e+", ".5", "._", ".5e+3", ".5e3", "+.5", ".", "-.inf", ".Inf",
        "+.INF",
        ".nan", "-.nan", ".NaN", "1:30.5", "1:30.", "1:3a.5", "12:30:45.25", "2024-01-02", "<<", "=", "abc", "1 2",
        "١٢",
        "123456789012345678901234567890", "1_", "_1", "0.0.0", "1..2", "--1", "+-1",
    ])
    func knownCases(_ text: String) {
        #expect(YAMLScalarType.tag(ofPlain: text) == Self.expected(text), "'\(text)'")
    }

    @Test(arguments: [1 as UInt64, 2, 3])
    func randomTextAgreesWithYams(seed: UInt64) {
        var generator = SplitMix64(seed: seed)
        let alphabet = Array("0123456789+-._:eEbxoOinfaINFNAulrsyYtT~ ")
        for _ in 0..<20_000 {
            let length = Int.random(in: 0...7, using: &generator)
            let text = String((0..<length).map { _ in alphabet.randomElement(using: &generator)! })
            let tag = YAMLScalarType.tag(ofPlain: text)
            guard tag == Self.expected(text) else {
                Issue.record("seed \(seed): '\(text)' typed \(tag), Yams says \(Self.expected(text))")
                return
            }
        }
    }

    @Test func aQuotedOrTaggedScalarKeepsItsTag() throws {
        guard case .document(.mapping(let mapping)?) = YAMLComposer.compose("a: '5'\nb: !!str 6\nc: 7\nd: \"yes\"")
        else {
            Issue.record("a mapping expected")
            return
        }
        let types = mapping.map(\.value.tagName)
        #expect(types == [Tag.Name.str, .str, .int, .str])
    }
}
