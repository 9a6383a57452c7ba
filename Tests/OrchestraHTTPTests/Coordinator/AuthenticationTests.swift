import Foundation
import HTTPTypes
import Orchestra
import OrchestraHTTP
import OrchestraTestKit
import TestSupport
import Testing

/// `HTTPCoordinator.Authentication`'s own closures, as the transport sees their effect.
@Suite("HTTPCoordinator.Authentication", .timeLimit(.minutes(1)), .takesTurns)
struct AuthenticationTests {
    static let tokenField = HTTPField.Name("X-Api-Token")!

    @Test func aCustomSignClosureSignsEveryRequestIncludingReSendsAfterARefresh() async throws {
        // The server accepts only "custom t1 v1"; the first token is refused once.
        let transport = ScriptedHTTPTransport { request, _ in
            request.headerFields[Self.tokenField] == "custom t1 v1"
                ? ok("in") : (HTTPResponse(status: .unauthorized), Data())
        }
        let refresher = TokenRefresher(initial: AuthToken("t0")) { _ in AuthToken("t1") }
        let api = HTTPCoordinator(
            transport: transport,
            configuration: .init(
                retry: .never,
                authentication: .init(
                    refresher: refresher,
                    sign: { request, token in
                        request.headerFields[Self.tokenField] = "custom \(token.value) v\(token.version)"
                    })
            ))
        let first = try await api.data(for: get("a.test", "/one"))
        let second = try await api.data(for: get("a.test", "/two"))
        #expect(first.response.status == .ok && second.response.status == .ok)
        #expect(
            transport.requests.map { $0.headerFields[Self.tokenField] } == [
                "custom t0 v0", "custom t1 v1", "custom t1 v1",
            ])
        #expect(transport.requests.map(\.path) == ["/one", "/one", "/two"])
        #expect(
            transport.requests.allSatisfy { $0.headerFields[.authorization] == nil },
            "the default signing is replaced, not added to")
        #expect(refresher.refreshCount == 1)
    }
}
