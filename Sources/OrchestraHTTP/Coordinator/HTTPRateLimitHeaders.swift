import Foundation
public import HTTPTypes
public import Orchestra

/// What a server announced about its rate limit in a response's header fields: its quota per
/// window, what is left of it and when the window resets.
///
/// Read from, in this order (the first family present wins):
/// - the IETF httpapi draft's structured fields, `RateLimit-Policy: "default";q=600;w=60` and
///   `RateLimit: "default";r=42;t=17` (several policies: the one that leaves the lowest rate);
/// - its earlier drafts, `RateLimit-Limit`, `RateLimit-Remaining`, `RateLimit-Reset` and
///   `RateLimit-Policy: 600;w=60`, or `RateLimit: limit=600, remaining=42, reset=17`;
/// - the common `X-RateLimit-Limit`, `X-RateLimit-Remaining`, `X-RateLimit-Reset` (GitHub,
///   Twitter, Shopify…), whose reset is seconds from now at some APIs and a Unix time at others
///   (GitHub's): a value above 10⁹ is taken as a Unix time in seconds, above 10¹² in
///   milliseconds.
///
/// Every value is the server's and is not trusted: a field that is not a whole number is
/// ignored, numbers saturate instead of overflowing, and a reset or window is at most a day.
///
/// ```swift
/// let announced = HTTPRateLimitHeaders(response.headerFields)
/// announced?.sustainableRate   // 600 per 60 s: the quota over its window
/// ```
public struct HTTPRateLimitHeaders: Sendable, Hashable, CustomStringConvertible {
    /// The quota: requests allowed per ``window``.
    public var quota: Int?
    /// The window the quota is counted over.
    public var window: Duration?
    /// Requests left in the current window.
    public var remaining: Int?
    /// Time until the current window resets (and ``remaining`` is full again).
    public var reset: Duration?
    /// The header fields it was read from, as the server wrote them (each at most 200
    /// characters): for the event that reports an adjustment.
    public var source: String

    /// The longest window or reset taken from a server: a day.
    public static let longestWindow = Duration.seconds(86_400)

    /// An announcement of these values.
    public init(
        quota: Int? = nil, window: Duration? = nil, remaining: Int? = nil, reset: Duration? = nil, source: String = ""
    ) {
        self.quota = quota
        self.window = window
        self.remaining = remaining
        self.reset = reset
        self.source = source
    }

    /// Reads what `fields` announce; `nil` if they announce nothing usable.
    ///
    /// - Parameters:
    ///   - fields: A response's header fields.
    ///   - now: The time a Unix-time reset is measured from.
    public init?(_ fields: HTTPFields, now: Date = Date()) {
        // Most responses have none of these fields: one pass over the names says so, before
        // the look-ups of each family.
        guard
            fields.contains(where: {
                let name = $0.name.canonicalName
                return name.hasPrefix("ratelimit") || name.hasPrefix("x-ratelimit")
            })
        else { return nil }
        if let structured = Self.structured(fields) {
            self = structured
        } else if let legacy = Self.legacy(fields, prefix: "RateLimit-", now: now) {
            self = legacy
        } else if let common = Self.legacy(fields, prefix: "X-RateLimit-", now: now) {
            self = common
        } else {
            return nil
        }
        guard remaining != nil || (quota != nil && window != nil) else { return nil }
    }

    /// The rate that keeps within the announcement: the quota over its window when both are
    /// given (steady, however the window's count goes), else what is left spread over what
    /// remains of the window (GitHub's `X-RateLimit-*` give no window). `nil` when neither is
    /// known or nothing is left (then wait for ``reset``: see ``isExhausted``).
    public var sustainableRate: Rate? {
        if let quota, quota >= 1, let window, window > .zero {
            return .per(quota, window)
        }
        if let remaining, remaining >= 1, let reset, reset > .zero {
            return .per(remaining, reset)
        }
        return nil
    }

    /// Whether nothing is left of the quota until ``reset``.
    public var isExhausted: Bool { remaining == 0 }

    /// `RateLimit: r=0;t=17`, as the server wrote it.
    public var description: String { source }

    // MARK: - The structured fields of the current draft

    private static let policyField = HTTPField.Name("RateLimit-Policy")!
    private static let rateLimitField = HTTPField.Name("RateLimit")!

    /// `RateLimit: "p";r=42;t=17` with `RateLimit-Policy: "p";q=600;w=60`, matched by name;
    /// among several policies the one that leaves the lowest rate.
    private static func structured(_ fields: HTTPFields) -> HTTPRateLimitHeaders? {
        let states = items(fields[values: rateLimitField])
        // Draft 6's `RateLimit: limit=…, remaining=…` has no `r`: not this family.
        guard states.contains(where: { $0.parameters["r"] != nil }) else { return nil }
        let policies = items(fields[values: policyField])
        var best: HTTPRateLimitHeaders?
        for state in states {
            guard let remaining = state.parameters["r"].flatMap(number) else { continue }
            let reset = state.parameters["t"].flatMap(number).map(seconds)
            let policy = policies.first { $0.name == state.name } ?? (policies.count == 1 ? policies[0] : nil)
            var announced = HTTPRateLimitHeaders(
                quota: policy?.parameters["q"].flatMap(number),
                window: policy?.parameters["w"].flatMap(number).map(seconds),
                remaining: remaining, reset: reset)
            announced.source = source(fields, [rateLimitField, policyField])
            if best == nil || announced.isSlower(than: best!) { best = announced }
        }
        return best
    }

    /// Draft 5–7 fields (`RateLimit-Limit`, `-Remaining`, `-Reset`, a `RateLimit-Policy` of
    /// `600;w=60`, or draft 6's one `RateLimit: limit=600, remaining=42, reset=17`), or the
    /// `X-RateLimit-` ones.
    private static func legacy(_ fields: HTTPFields, prefix: String, now: Date) -> HTTPRateLimitHeaders? {
        let limitName = HTTPField.Name(prefix + "Limit")!
        let remainingName = HTTPField.Name(prefix + "Remaining")!
        let resetName = HTTPField.Name(prefix + "Reset")!
        var quota = fields[limitName].flatMap { number(firstItem($0)) }
        var remaining = fields[remainingName].flatMap { number(firstItem($0)) }
        var resetValue = fields[resetName].flatMap { number(firstItem($0)) }
        var window: Duration?
        var names = [limitName, remainingName, resetName]
        if prefix == "RateLimit-" {
            if let policy = items(fields[values: policyField]).first, let windowValue = policy.parameters["w"] {
                quota = quota ?? number(policy.name)
                window = number(windowValue).map(seconds)
                names.append(policyField)
            }
            if remaining == nil, let combined = fields[rateLimitField] {
                // Draft 6: `RateLimit: limit=600, remaining=42, reset=17`.
                var values: [String: Int] = [:]
                for part in combined.split(separator: ",") {
                    let pair = part.split(separator: "=", maxSplits: 1)
                    guard pair.count == 2 else { continue }
                    values[pair[0].trimmingCharacters(in: .whitespaces).lowercased()] = number(
                        pair[1].trimmingCharacters(in: .whitespaces))
                }
                quota = quota ?? values["limit"]
                remaining = values["remaining"]
                resetValue = resetValue ?? values["reset"]
                names.append(rateLimitField)
            }
        }
        guard quota != nil || remaining != nil else { return nil }
        let reset = resetValue.map { value in
            prefix == "RateLimit-" ? seconds(value) : resetFromNow(value, now: now)
        }
        var announced = HTTPRateLimitHeaders(quota: quota, window: window, remaining: remaining, reset: reset)
        announced.source = source(fields, names)
        return announced
    }

    /// An `X-RateLimit-Reset`: seconds from now, or a Unix time (seconds above 10⁹,
    /// milliseconds above 10¹²), as the time from `now`.
    private static func resetFromNow(_ value: Int, now: Date) -> Duration {
        let nowSeconds = now.timeIntervalSince1970
        if value > 1_000_000_000_000 {
            return seconds(Int((Double(value) / 1_000 - nowSeconds).rounded(.up)))
        }
        if value > 1_000_000_000 {
            return seconds(Int((Double(value) - nowSeconds).rounded(.up)))
        }
        return seconds(value)
    }

    /// Whole seconds, clamped to 0…``longestWindow``.
    private static func seconds(_ value: Int) -> Duration {
        .seconds(Int64(max(0, min(value, 86_400))))
    }

    /// A whole number of at most 18 digits (a longer one saturates to `Int.max`); `nil` for
    /// anything else, a sign included.
    private static func number(_ text: some StringProtocol) -> Int? {
        let digits = text.trimmingCharacters(in: .whitespaces)
        guard !digits.isEmpty, digits.utf8.allSatisfy({ (0x30...0x39).contains($0) }) else { return nil }
        return digits.utf8.count > 18 ? Int.max : Int(digits)
    }

    private static func firstItem(_ value: String) -> Substring {
        // `X-RateLimit-Limit: 600, 600;w=60` (some gateways repeat it with a policy).
        let first = value.split(separator: ",", maxSplits: 1).first ?? Substring(value)
        return first.split(separator: ";", maxSplits: 1).first ?? first
    }

    private struct Item {
        var name: String
        var parameters: [String: String]
    }

    /// The items of a structured-field list, `"name";key=value;key=value, …` (names quoted or
    /// bare), at most 16 of them.
    private static func items(_ values: [String]) -> [Item] {
        var items: [Item] = []
        for value in values {
            for member in value.split(separator: ",") where items.count < 16 {
                let parts = member.split(separator: ";")
                guard let first = parts.first else { continue }
                var name = first.trimmingCharacters(in: .whitespaces)
                if name.hasPrefix("\""), name.hasSuffix("\""), name.count >= 2 {
                    name = String(name.dropFirst().dropLast())
                }
                var parameters: [String: String] = [:]
                for parameter in parts.dropFirst() {
                    let pair = parameter.split(separator: "=", maxSplits: 1)
                    guard pair.count == 2 else { continue }
                    parameters[pair[0].trimmingCharacters(in: .whitespaces).lowercased()] = pair[1]
                        .trimmingCharacters(in: .whitespaces)
                }
                items.append(Item(name: name, parameters: parameters))
            }
        }
        return items
    }

    /// `Name: value; Name: value` of the fields present, each value at most 200 characters.
    private static func source(_ fields: HTTPFields, _ names: [HTTPField.Name]) -> String {
        names.compactMap { name in
            fields[name].map { value in "\(name): \(value.count > 200 ? String(value.prefix(200)) + "…" : value)" }
        }.joined(separator: "; ")
    }

    private func isSlower(than other: HTTPRateLimitHeaders) -> Bool {
        if isExhausted != other.isExhausted { return isExhausted }
        guard let mine = sustainableRate?.permitsPerSecond else { return false }
        guard let theirs = other.sustainableRate?.permitsPerSecond else { return true }
        return mine < theirs
    }
}

extension Rate {
    /// Permits per second, as a `Double`: to compare rates of different intervals.
    package var permitsPerSecond: Double {
        let seconds = Double(interval.components.seconds) + Double(interval.components.attoseconds) * 1e-18
        return Double(count) / seconds
    }

    /// The slower of two rates (`nil`: not limited); `a` when they are as fast.
    package static func slower(_ a: Rate?, _ b: Rate?) -> Rate? {
        guard let a else { return b }
        guard let b else { return a }
        return a.permitsPerSecond <= b.permitsPerSecond ? a : b
    }
}
