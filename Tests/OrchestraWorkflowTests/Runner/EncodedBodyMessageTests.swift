import Foundation
import HTTPTypes
import OrchestraHTTP
import TestSupport
import Testing

@testable import OrchestraWorkflow

/// A body still encoded (AsyncHTTPClient decodes gzip and deflate only: httpbin's /brotli came
/// back as br) says so, instead of only "is not JSON".
@Suite("ResponseReader: a body still encoded", .takesTurns)
struct EncodedBodyMessageTests {
    @Test(arguments: [
        ("br", " (its Content-Encoding is 'br': only gzip and deflate are decoded on every transport)"),
        ("gzip", ""), ("identity", ""),
    ])
    func theMessageNamesAnEncodingThatIsNotDecodedEverywhere(_ encoding: String, _ note: String) {
        let response = HTTPResponse(status: .ok, headerFields: [.contentEncoding: encoding])
        var reader = ResponseReader(HTTPResult(response: response, body: Data([0x1B, 0x2F, 0x00])))
        #expect(reader.document() == nil)
        #expect(reader.notJSON == "is not JSON" + note)
    }
}
