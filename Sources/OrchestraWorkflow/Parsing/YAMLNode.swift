import Yams

/// The parser reads ``YAMLNode``s: in this module `Node` is ours, not Yams'.
typealias Node = YAMLNode

/// A node of a workflow file as ``YAMLComposer`` builds it: a scalar with its text, style,
/// written tag and place, a list, or a mapping with its entries in order.
///
/// Why not Yams' `Node`: it carries a tag object per value (a class Yams resolves in place,
/// so one cannot be shared), an anchor and a resolver and constructor per tag; building,
/// copying and freeing them was most of `orchestra validate`'s time on large files. This one
/// is plain values. Yams still types values the same way: ``int``, ``bool`` and ``float`` ask
/// its constructors, and ``YAMLScalarType`` follows its resolver's rules.
enum YAMLNode {
    case scalar(Scalar)
    case mapping(Mapping)
    case sequence(Sequence)

    struct Scalar {
        var string: String
        /// The tag written on the scalar (`!!str 6`), `str` for a quoted one, or `.implicit`
        /// for plain text, typed by ``YAMLScalarType``.
        var tag: Tag.Name
        var style: Yams.Node.Scalar.Style
        var mark: SourceLocation?
    }

    /// A mapping's entries, in the order written.
    struct Mapping: RandomAccessCollection {
        var pairs: [(key: YAMLNode, value: YAMLNode)]
        var tag: Tag.Name
        var mark: SourceLocation?

        var startIndex: Int { pairs.startIndex }
        var endIndex: Int { pairs.endIndex }
        subscript(position: Int) -> (key: YAMLNode, value: YAMLNode) { pairs[position] }
    }

    struct Sequence: RandomAccessCollection {
        var nodes: [YAMLNode]
        var tag: Tag.Name
        var mark: SourceLocation?

        var startIndex: Int { nodes.startIndex }
        var endIndex: Int { nodes.endIndex }
        subscript(position: Int) -> YAMLNode { nodes[position] }
    }

    /// Where the node begins: 1-based line and column (in Unicode scalars, as libyaml counts).
    var mark: SourceLocation? {
        switch self {
        case .scalar(let scalar): scalar.mark
        case .mapping(let mapping): mapping.mark
        case .sequence(let sequence): sequence.mark
        }
    }

    /// The resolved tag (`int`, `str`, `bool`…): how YAML types the node, by
    /// ``YAMLScalarType`` for a scalar.
    var tagName: Tag.Name {
        switch self {
        case .scalar(let scalar): YAMLScalarType.tag(of: scalar)
        case .mapping(let mapping): mapping.tag == .implicit ? .map : mapping.tag
        case .sequence(let sequence): sequence.tag == .implicit ? .seq : sequence.tag
        }
    }

    /// A scalar's value as Yams constructs an `Int` (`0x1F`, `1_000`, `1:30`…).
    var int: Int? { yamsScalar.flatMap(Int.construct) }
    /// A scalar's value as Yams constructs a `Bool` (`yes`, `off`…).
    var bool: Bool? { yamsScalar.flatMap(Bool.construct) }
    /// A scalar's value as Yams constructs a `Double` (`.inf`, `1e3`…).
    var float: Double? { yamsScalar.flatMap(Double.construct) }

    private var yamsScalar: Yams.Node.Scalar? {
        guard case .scalar(let scalar) = self else { return nil }
        return Yams.Node.Scalar(scalar.string, Tag(scalar.tag, .basic), scalar.style)
    }
}
