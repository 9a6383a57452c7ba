import TestSupport
import Testing
import Yams

@testable import OrchestraWorkflow

@Suite("YAML composer", .timeLimit(.minutes(1)), .takesTurns)
struct YAMLComposerTests {
    /// Lists and mappings used as keys (always refused as workflow fields, but composed first):
    /// the fuzzer found the composer left their tags unresolved where Yams resolves them.
    @Test(arguments: ["hosts: {{x}}\n", "{[x, 1]: a}\n", "? [a, {b: [c]}]\n: v\n", "a: {{x}: 1, y: 2}\n"])
    func aListOrMappingUsedAsAKeyComposesAsYamsComposesIt(text: String) throws {
        guard case .document(let node) = YAMLComposer.compose(text) else {
            Issue.record("not composed: \(text)")
            return
        }
        let yams = try Yams.compose(yaml: text, .basic)
        #expect(WorkflowFuzzTests.same(node, yams), "\(text)")
    }

    @Test func aKeyNestedThousandsOfLevelsDeepIsResolvedWithoutRecursion() {
        let depth = 900  // libyaml refuses more than 1,000 levels
        let key = YAMLNode.scalar(.init(string: "k", tag: .implicit, style: .plain, mark: nil))
        var node = key
        for _ in 0..<depth { node = .sequence(.init(nodes: [node], tag: .implicit, mark: nil)) }
        var resolved = YAMLComposer.resolvedAsKey(node)
        var levels = 0
        while case .sequence(let sequence) = resolved {
            #expect(sequence.tag == .seq)
            levels += 1
            resolved = sequence.nodes[0]
        }
        #expect(levels == depth)
        guard case .scalar(let scalar) = resolved else { return }
        #expect(scalar.tag == .str && scalar.string == "k")
    }
}
