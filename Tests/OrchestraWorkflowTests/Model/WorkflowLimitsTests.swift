import OrchestraHTTP
import TestSupport
import Testing

@testable import OrchestraWorkflow

/// `limit:` and `hosts:` turned into each layer's numbers, in one place.
@Suite("WorkflowLimits", .takesTurns)
struct WorkflowLimitsTests {
    /// limit → connections per host, graph window (no `hosts:`), `for_each` window, durable limit.
    @Test(arguments: [
        (1, 64, 17, 17, 1),
        (2, 64, 18, 18, 2),
        (5, 64, 21, 21, 5),
        (6, 64, 24, 24, 6),
        (8, 64, 32, 32, 8),
        (64, 64, 256, 256, 64),
        (100, 100, 400, 400, 100),
        (Int(Int32.max), Int(Int32.max), 4 * Int(Int32.max), 4 * Int(Int32.max), Int(Int32.max)),
        (Int(Int32.max) + 1, Int(Int32.max) + 1, 4 * (Int(Int32.max) + 1), 4 * (Int(Int32.max) + 1), Int(Int32.max)),
        (Int.max / 4, Int.max / 4, Int.max, Int.max, Int(Int32.max)),
        (Int.max, Int.max, Int.max, Int.max, Int(Int32.max)),
    ])
    func eachLayersNumberFromLimit(limit: Int, connections: Int, graph: Int, forEach: Int, durable: Int) {
        let limits = WorkflowLimits(limit: limit)
        #expect(limits.connectionsPerHost == connections)
        #expect(limits.graphWindow == graph)
        #expect(limits.forEachWindow == forEach)
        #expect(limits.durableLimit == durable)
        let configuration = limits.coordinatorConfiguration(authentication: nil)
        #expect(configuration.maxConcurrentRequests == limit && configuration.maxConcurrentRequestsPerHost == limit)
        #expect(configuration.hostLimits.isEmpty && configuration.requestTimeout == nil)
    }

    /// With `hosts:` the graph starts every ready step; a `for_each` keeps its window (its
    /// list, unlike the file's steps, has no bound).
    @Test func hostLimitsLiftTheGraphWindowButNotTheForEachWindow() {
        let limits = WorkflowLimits(limit: 8, hosts: [HostLimit(host: "api.test", limit: 2)])
        #expect(limits.graphWindow == .max)
        #expect(limits.forEachWindow == 32)
    }

    @Test func hostEntriesAreKeyedByTheHostTheyName() {
        let limits = WorkflowLimits(
            limit: 8,
            hosts: [
                HostLimit(host: "API.test", limit: 4), HostLimit(host: "api.test.", limit: 2),
                HostLimit(host: "api.test:8443", limit: 1), HostLimit(host: "[::1]:8080", limit: Int.max),
            ])
        #expect(
            limits.coordinatorConfiguration(authentication: nil).hostLimits == [
                "api.test": 2, "api.test:8443": 1, "[::1]:8080": Int.max,
            ])
        #expect(
            limits.resourceLimits == [
                "host:api.test": 2, "host:api.test:8443": 1, "host:[::1]:8080": Int(Int32.max),
            ])
    }

    /// The durable resource of a request is the entry the coordinator limits it by.
    @Test(
        arguments: [
            ("https", "API.TEST", "host:api.test"),
            ("https", "api.test:8443", "host:api.test:8443"),
            ("http", "api.test:8443", "host:api.test:8443"),
            ("https", "api.test.:443", "host:api.test"),
            ("https", "HOST", "host:host:443"),
            ("http", "host", nil),
            ("http", "[::1]:8080", "host:[::1]:8080"),
            ("http", "user:pw@[::1]:8080", "host:[::1]:8080"),
            ("http", "other.test", nil),
        ] as [(String, String, String?)])
    func aRequestsResourceIsItsHostEntry(scheme: String, authority: String, resource: String?) {
        let limits = WorkflowLimits(
            limit: 8,
            hosts: [
                HostLimit(host: "api.test", limit: 2), HostLimit(host: "api.test:8443", limit: 1),
                HostLimit(host: "HOST:443", limit: 1), HostLimit(host: "[::1]:8080", limit: 3),
            ])
        #expect(limits.resource(scheme: scheme, authority: authority) == resource)
        let entries = limits.hosts.keys.map(\.description)
        let matching = HostLimit(host: resource.map { String($0.dropFirst("host:".count)) } ?? "", limit: 1)
        #expect(resource == nil || entries.contains(matching.host))
        #expect(resource == nil || matching.matches(scheme: scheme, authority: authority))
    }
}
