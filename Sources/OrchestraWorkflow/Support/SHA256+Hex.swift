import Crypto
import Foundation

extension String {
    /// The SHA-256 of the text's UTF-8 bytes, as 64 lowercase hex digits: `| sha256`, and the
    /// content hashes a `--state` file keeps.
    package var sha256Hex: String {
        SHA256.hash(data: Data(utf8)).map { String(format: "%02x", $0) }.joined()
    }
}
