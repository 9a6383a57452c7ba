import Foundation
import HTTPTypes
import Orchestra
import OrchestraTestKit
import TestSupport
import Testing

@testable import OrchestraHTTP

/// The credentials the coordinator attaches never follow a redirect to another origin,
/// whatever field carries them.
@Suite("HTTPCoordinator: credentials on redirects", .timeLimit(.minutes(1)), .takesTurns)
struct RedirectCredentialTests {
    static let tokenField = HTTPField.Name("X-Api-Token")!
    static let keyField = HTTPField.Name("X-Api-Key")!

    static func redirect(_ status: Int, to location: String) -> (HTTPResponse, Data) {
        var response = HTTPResponse(status: .init(code: status))
        response.headerFields[.location] = location
        return (response, Data())
    }

    /// a.test/start → a.test/same (same origin) → `target` (another origin, or not) → 200.
    static func chain(to target: String) -> ScriptedHTTPTransport {
        ScriptedHTTPTransport { request, _ in
            switch (request.authority, request.path) {
            case ("a.test", "/start"): redirect(302, to: "/same")
            case ("a.test", "/same"): redirect(307, to: target)
            default: ok()
            }
        }
    }

    static func signing(_ field: HTTPField.Name, refresher: TokenRefresher) -> HTTPCoordinator.Authentication {
        .init(refresher: refresher, sign: { request, token in request.headerFields[field] = "token \(token.value)" })
    }

    @Test(arguments: [
        "https://b.test/elsewhere",  // another host
        "http://a.test/elsewhere",  // another scheme
        "https://a.test:8443/elsewhere",  // another port
    ])
    func theAuthenticationsOwnFieldIsDroppedOnAHopToAnotherOrigin(target: String) async throws {
        let transport = Self.chain(to: target)
        let refresher = TokenRefresher(initial: AuthToken("t0")) { _ in AuthToken("t1") }
        let api = HTTPCoordinator(
            transport: transport,
            configuration: .init(authentication: Self.signing(Self.tokenField, refresher: refresher)))
        let result = try await api.data(for: get("a.test", "/start"))
        #expect(result.status == .ok && result.redirects.count == 2)
        let tokens = transport.requests.map { $0.headerFields[Self.tokenField] }
        #expect(tokens == ["token t0", "token t0", nil], "signed for a.test only")
    }

    @Test func theDefaultAuthorizationAndCallerNamedFieldsAreDroppedToo() async throws {
        let transport = Self.chain(to: "https://b.test/elsewhere")
        let refresher = TokenRefresher(initial: AuthToken("t0")) { _ in AuthToken("t1") }
        let api = HTTPCoordinator(
            transport: transport, configuration: .init(authentication: .init(refresher: refresher)))
        var request = get("a.test", "/start")
        request.headerFields[Self.keyField] = "k3y"
        request.headerFields[.accept] = "text/plain"
        _ = try await api.data(for: request, options: HTTPRequestOptions(credentialFields: [Self.keyField]))
        let sent = transport.requests
        #expect(sent.map { $0.headerFields[.authorization] } == ["Bearer t0", "Bearer t0", nil])
        #expect(sent.map { $0.headerFields[Self.keyField] } == ["k3y", "k3y", nil])
        #expect(sent.map { $0.headerFields[.accept] } == ["text/plain", "text/plain", "text/plain"])
    }

    @Test func aSameOriginChainKeepsTheToken() async throws {
        let transport = Self.chain(to: "HTTPS://A.TEST/elsewhere")
        let refresher = TokenRefresher(initial: AuthToken("t0")) { _ in AuthToken("t1") }
        let api = HTTPCoordinator(
            transport: transport,
            configuration: .init(authentication: Self.signing(Self.tokenField, refresher: refresher)))
        _ = try await api.data(for: get("a.test", "/start"))
        #expect(transport.requests.map { $0.headerFields[Self.tokenField] } == ["token t0", "token t0", "token t0"])
    }

    /// The other origin never saw the token: its 401 is its answer, not a reason to refresh
    /// the token and send it again.
    @Test func aRefusalFromAnotherOriginDoesNotRefreshTheToken() async throws {
        let transport = ScriptedHTTPTransport { request, _ in
            request.authority == "a.test"
                ? Self.redirect(302, to: "https://b.test/") : (HTTPResponse(status: .unauthorized), Data())
        }
        let refresher = TokenRefresher(initial: AuthToken("t0")) { _ in AuthToken("t1") }
        let api = HTTPCoordinator(
            transport: transport,
            configuration: .init(authentication: Self.signing(Self.tokenField, refresher: refresher)))
        let result = try await api.data(for: get("a.test", "/start"))
        #expect(result.status == .unauthorized)
        #expect(refresher.refreshCount == 0)
        #expect(transport.requests.count == 2)
        #expect(transport.requests.allSatisfy { $0.authority == "a.test" || $0.headerFields[Self.tokenField] == nil })
    }
}
