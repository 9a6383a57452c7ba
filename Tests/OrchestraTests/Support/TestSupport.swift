import Orchestra
@_exported import OrchestraTestKit
import Testing

struct TestError: Error, Equatable, CustomStringConvertible {
    var name: String
    init(_ name: String) { self.name = name }
    var description: String { "TestError(\(name))" }
}
