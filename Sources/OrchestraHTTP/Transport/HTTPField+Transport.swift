package import HTTPTypes

extension HTTPField {
    /// The value as a string when its bytes are UTF-8 (ASCII included), else `nil`: a client
    /// that takes header values as strings cannot send such a value as it is.
    package var utf8Value: String? {
        withUnsafeBytesOfValue { String(validating: $0, as: UTF8.self) }
    }
}

extension HTTPTransportError {
    /// The request has a header value a client cannot send as its bytes: refused before
    /// sending, naming the header, rather than sent as other bytes.
    package static func unsendableHeader(
        _ name: HTTPField.Name, client: String, authority: String?
    ) -> HTTPTransportError {
        HTTPTransportError(
            code: .invalidRequest,
            message:
                "header '\(name.rawName)' of the request to \(authority ?? "the server") has a value whose bytes are not UTF-8; \(client) cannot send them as they are",
            host: authority
        )
    }
}
