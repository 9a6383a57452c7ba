import Foundation
import HTTPTypes
import Orchestra
import OrchestraDurableHTTP
import OrchestraHTTP

/// The `auth:` block at run time: a ``TokenRefresher`` (one login or refresh at a time, shared
/// by every step) whose refresh sends the login or refresh request straight to the transport
/// (outside the limits, so it never waits behind the requests it unblocks),
/// and the coordinator's ``HTTPCoordinator/Authentication`` that signs each request and
/// recognises a refused token.
///
/// Every token it obtains, and every other credential of a login or refresh response, is a
/// secret of the run from the moment the response arrives: `redactor` learns it before the
/// observer sees the response (``CredentialLearningTransport``).
final class WorkflowAuthenticator: Sendable {
    private let auth: WorkflowAuth
    private let counts: Locked<(logins: Int, refreshes: Int)>
    let refresher: TokenRefresher

    /// - Parameters:
    ///   - transport: Where the login and refresh requests go, straight.
    ///   - redactor: The run's redactor, which learns the tokens.
    ///   - observer: Called with each login and refresh exchange (label `auth`), after
    ///     `redactor` has learned its credentials.
    init<C: Clock>(
        _ auth: WorkflowAuth, values: TemplateValues, transport: any HTTPTransport, redactor: Redactor,
        observer: (@Sendable (HTTPExchange) -> Void)? = nil, timeout: Duration, clock: C
    ) where C.Duration == Duration {
        self.auth = auth
        let counts = Locked((logins: 0, refreshes: 0))
        self.counts = counts
        let learning = CredentialLearningTransport(
            base: transport, redactor: redactor, tokens: [auth.login.token] + [auth.refresh?.token].compactMap { $0 })
        let transport: any HTTPTransport =
            observer.map { ObservedTransport(base: learning, clock: clock, label: "auth", observe: $0) } ?? learning
        refresher = TokenRefresher(initial: nil, clock: clock) { current in
            // A refresh that fails falls back to a new login.
            if current != nil, let refresh = auth.refresh {
                counts.withLock { $0.refreshes += 1 }
                if let token = try? await Self.fetch(
                    refresh, kind: "refresh", values: values, transport: transport, timeout: timeout, clock: clock)
                {
                    return token
                }
            }
            counts.withLock { $0.logins += 1 }
            return try await Self.fetch(
                auth.login, kind: "login", values: values, transport: transport, timeout: timeout, clock: clock)
        }
    }

    /// Logins and refreshes sent so far.
    var logins: Int { counts.withLock { $0.logins } }
    var refreshes: Int { counts.withLock { $0.refreshes } }

    /// Signs with `<header>: <scheme> <token>` and recognises refusals as the block says.
    var authentication: HTTPCoordinator.Authentication {
        let auth = auth
        let header = HTTPField.Name(auth.header) ?? .authorization
        return HTTPCoordinator.Authentication(
            refresher: refresher,
            sign: { request, token in
                request.headerFields[header] = auth.scheme.isEmpty ? token.value : "\(auth.scheme) \(token.value)"
            },
            isAuthenticationFailure: { response, body in
                auth.isFailure(
                    status: response.status.code,
                    body: HTTPBodyText(decoding: body, contentType: response.headerFields[.contentType]).text)
            }
        )
    }

    /// Sends a login or refresh request and reads the token (and its lifetime) from the
    /// response.
    private static func fetch<C: Clock>(
        _ tokenRequest: TokenRequest, kind: String, values: TemplateValues, transport: any HTTPTransport,
        timeout: Duration, clock: C
    ) async throws -> AuthToken where C.Duration == Duration {
        let rendered = try RenderedRequest(tokenRequest.request, values: values)
        let what = "\(kind) \(rendered.request.method) \(short: rendered.url)"
        let result: HTTPResult
        do {
            result = try await withTimeout(timeout, clock: clock) {
                // Straight to the transport: the token must not wait behind the requests it unblocks.
                // A durable run sends it afresh every time: never a token stored by an earlier run.
                let (response, body) = try await DurableHTTPTransport.withFreshJobs {
                    try await transport.send(rendered.request, content: rendered.body, progress: nil)
                }
                return HTTPResult(response: response, body: body)
            }
        } catch let error as TimeoutError {
            throw StepFailure("\(what) timed out after \(StepErrors.format(error.timeout ?? timeout))")
        } catch is CancellationError {
            throw CancellationError()
        } catch {
            throw StepFailure("\(what) failed: \(StepErrors.describe(error, authority: rendered.authority))")
        }
        let status = result.status.code
        var reader = ResponseReader(result)
        guard (200...299).contains(status) else {
            throw StepFailure("\(what) answered \(status): \(reader.snippet)")
        }
        let token: JSONValue
        do {
            token = try reader.value(of: tokenRequest.token)
        } catch {
            throw StepFailure("\(what): token: \(error.reason)")
        }
        let lifetime: Duration? = tokenRequest.expiresIn.flatMap { try? reader.value(of: $0) }.flatMap { value in
            switch value {
            case .integer(let seconds): .seconds(seconds)
            // Saturated: a number such as 1e400 is a very long lifetime, not a crash.
            case .number(let seconds): .milliseconds(Int64(max(-1e15, min(1e15, seconds.doubleValue * 1_000))))
            case .string(let text): Int(text.trimmingCharacters(in: .whitespaces)).map { .seconds($0) }
            default: nil
            }
        }
        return AuthToken(token.interpolated, lifetime: lifetime)
    }
}

/// Below the observer of the auth block's requests: makes the credentials of each successful
/// login or refresh response secrets of the run (``Redactor/learn(_:)``) before anything shows
/// the response. They are the value at each `token:` place, and every string of the JSON body
/// whose member's name says it is a credential (``isCredential(name:)``: `refresh_token`,
/// `id_token`, `client_secret`…).
struct CredentialLearningTransport: WrappingTransport {
    let base: any HTTPTransport
    let redactor: Redactor
    /// Where the login's and the refresh's tokens are.
    let tokens: [Capture.Source]

    /// The most credentials learned from one response, besides its token: a login response
    /// holds a few (`refresh_token`, `id_token`); a server's thousands would only cost memory.
    static let maximumCredentials = 16

    func exchange(
        _ request: HTTPRequest, content body: HTTPRequestBody?, receiving handling: HTTPResponseBodyHandling,
        progress: (@Sendable (_ received: Int, _ expected: Int?) -> Void)?, timeout: Duration?
    ) async throws -> (HTTPResponse, Data) {
        let (response, data) = try await base.forward(
            request, content: body, receiving: handling, progress: progress, timeout: timeout)
        guard (200...299).contains(response.status.code) else { return (response, data) }
        var reader = ResponseReader(HTTPResult(response: response, body: data))
        for source in tokens {
            if let token = try? reader.value(of: source) { redactor.learn(token.interpolated) }
        }
        if let document = reader.document() {
            for credential in Self.credentials(in: document).prefix(Self.maximumCredentials) {
                redactor.learn(credential)
            }
        }
        return (response, data)
    }

    /// The strings of `document` held by a member whose name says it is a credential, at any
    /// depth (walked with a list, not recursion).
    static func credentials(in document: JSONValue) -> [String] {
        var found: [String] = []
        var pending = [document]
        while let value = pending.popLast() {
            switch value {
            case .object(let members):
                for member in members {
                    if case .string(let text) = member.value, isCredential(name: member.key) {
                        found.append(text)
                    } else {
                        pending.append(member.value)
                    }
                }
            case .array(let elements):
                pending.append(contentsOf: elements)
            case .string, .null, .bool, .integer, .number:
                break
            }
        }
        return found
    }

    /// Whether a member's name says it holds a credential: it ends in `token` (`access_token`,
    /// `refreshToken`; not `token_type`) or names a secret, a password or an API key.
    static func isCredential(name: String) -> Bool {
        let letters = String(name.lowercased().filter(\.isLetter))
        return letters.hasSuffix("token") || letters.contains("secret") || letters.contains("password")
            || letters.hasSuffix("apikey")
    }
}
