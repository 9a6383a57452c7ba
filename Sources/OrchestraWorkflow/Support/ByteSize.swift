import Foundation

/// A number of bytes as a file or a flag writes it: `65536`, `64KB`, `64MB`, `1GB`, `512KiB`
/// (KB and KiB both 1,024 bytes, as curl's `--max-filesize` reads them).
package enum ByteSize {
    /// The largest size accepted: 1 TiB.
    package static let maximum = 1 << 40

    /// The bytes `text` says, or `nil` if it is not a size from 1 byte to 1 TiB.
    package static func parse(_ text: String) -> Int? {
        let trimmed = text.trimmingCharacters(in: .whitespaces).uppercased()
        let digits = trimmed.prefix { $0.isASCII && $0.isNumber }
        guard !digits.isEmpty, let number = Int(digits) else { return nil }
        let unit = trimmed.dropFirst(digits.count).trimmingCharacters(in: .whitespaces)
        let shift: Int
        switch unit {
        case "", "B": shift = 0
        case "K", "KB", "KIB": shift = 10
        case "M", "MB", "MIB": shift = 20
        case "G", "GB", "GIB": shift = 30
        case "T", "TB", "TIB": shift = 40
        default: return nil
        }
        guard number >= 1, number <= maximum >> shift else { return nil }
        return number << shift
    }
}
