import Foundation
import OrchestraDemoServer
import OrchestraTestKit
import TestSupport
import Testing

/// The catalogue of hostile input `orchestra` must show it handles: one row per case, each a
/// workflow file (or command-line arguments), the exit status, and what the output must say.
/// Every row runs the built executable and is cheap (nothing is sent: `validate`, or an
/// option refused before anything runs); cases that need a server are the tests after it.
@Suite("orchestra on hostile input", .timeLimit(.minutes(5)), .takesTurns)
struct HostileInputTests {
    /// What a row gives the command.
    enum Input: Sendable {
        /// `orchestra validate FILE` plus `extra` arguments, the file holding `text`.
        case file(String, extra: [String] = [])
        /// `orchestra validate FILE`, the file holding these bytes.
        case bytes([UInt8])
        /// `orchestra validate DIR`: a folder.
        case directory
        /// `orchestra` with these arguments, as they are.
        case arguments([String])
    }

    struct Row: Sendable, CustomStringConvertible {
        var name: String
        var input: Input
        var status: Int32
        /// Texts the output (standard output and error) must contain.
        var contains: [String]
        /// Texts it must contain exactly once.
        var once: [String] = []
        /// Texts it must not contain.
        var excludes: [String] = []
        /// Environment variables set for the command.
        var environment: [String: String] = [:]
        var description: String { name }
    }

    /// A step with `fields` (YAML lines under it, indented by 4) and a valid URL unless given.
    static func step(_ id: String = "a", _ fields: String...) -> String {
        let hasURL = fields.contains { $0.hasPrefix("url:") }
        return "  - id: \(id)\n" + (hasURL ? "" : "    url: \"http://x.test/\"\n")
            + fields.map { "    \($0)\n" }.joined()
    }

    /// `steps:` and one step with `fields`.
    static func flow(_ fields: String...) -> String {
        "steps:\n  - id: a\n" + (fields.contains { $0.hasPrefix("url:") } ? "" : "    url: \"http://x.test/\"\n")
            + fields.map { "    \($0)\n" }.joined()
    }

    /// `count` steps, step `i` needing step `needs(i)`.
    static func steps(_ count: Int, needs: (Int) -> Int?) -> String {
        "steps:\n"
            + (0..<count).map { index in
                "  - { id: s\(index), url: \"http://x.test/\(index)\"" + (needs(index).map { ", needs: s\($0)" } ?? "")
                    + " }\n"
            }.joined()
    }

    /// A value of 100,000 characters: messages quote its first 200 and its length.
    static let huge = String(repeating: "a", count: 100_000)
    static let hugeNote = "… (100000 characters)"

    /// Bytes that are not text: a fixed pseudo-random sequence (seed 14), so a failure replays.
    static let garbage: [UInt8] = {
        var state: UInt64 = 14
        return (0..<4_096).map { _ in
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return UInt8(truncatingIfNeeded: state >> 56)
        }
    }()

    static let rows: [Row] = [
        // Size: long chains and cycles are checked in linear time; a cycle names its ends.
        Row(
            name: "1,000-step chain", input: .file(steps(1_000) { $0 > 0 ? $0 - 1 : nil }), status: 0,
            contains: ["ok — 1000 steps, 999 dependencies"]),
        Row(
            name: "1,000-step cycle", input: .file(steps(1_000) { $0 > 0 ? $0 - 1 : 999 }), status: 2,
            contains: ["cycle", "… 991 more steps …"], once: ["cycle"]),
        Row(
            name: "100,000-deep nesting", input: .file(String(repeating: "[", count: 100_000)), status: 2,
            contains: ["not valid YAML or JSON"]),
        Row(
            name: "100,000-deep body",
            input: .file(
                flow("body: " + String(repeating: "[", count: 100_000) + String(repeating: "]", count: 100_000))),
            status: 2, contains: ["not valid YAML or JSON"]),

        // Numbers and durations: in range or refused naming the range, never overflowed.
        Row(
            name: "retry 1,100 attempts without backoff validates",
            input: .file(flow("retry: {attempts: 1100, backoff: 0s}")), status: 0, contains: ["ok — 1 step"]),
        Row(
            name: "timeout 1e10", input: .file(flow("timeout: 1e10")), status: 2,
            contains: ["field 'timeout': must be more than 0 to 24 h, got '1e10'"]),
        Row(
            name: "timeout of 20 digits", input: .file(flow("timeout: 99999999999999999999s")), status: 2,
            contains: ["more than 0 to 24 h, got '99999999999999999999s'"]),
        Row(
            name: "negative timeout", input: .file(flow("timeout: -5s")), status: 2,
            contains: ["must be more than 0, got '-5s'"]),
        Row(
            name: "retry backoff 1e10", input: .file(flow("retry: {backoff: 1e10}")), status: 2,
            contains: ["field 'retry.backoff': must be 0 to 30 s, got '1e10'"]),
        Row(
            name: "negative retry", input: .file(flow("retry: -1")), status: 2,
            contains: ["must be a number of attempts ≥ 1, got '-1'"]),
        Row(
            name: "negative limit", input: .file("limit: -3\n" + steps(1) { _ in nil }), status: 2,
            contains: ["field 'limit': must be an integer ≥ 1, got '-3'"]),
        Row(
            name: "limit of 23 digits", input: .file("limit: 99999999999999999999999\n" + steps(1) { _ in nil }),
            status: 2, contains: ["got '99999999999999999999999'"]),
        Row(
            name: "limit 1.5", input: .file("limit: 1.5\n" + steps(1) { _ in nil }), status: 2,
            contains: ["field 'limit': must be an integer ≥ 1, got '1.5'"]),
        Row(
            name: "expect 99", input: .file(flow("expect: 99")), status: 2,
            contains: ["must be an HTTP status (100–599), got '99'"]),
        Row(
            name: "expect 200.5", input: .file(flow("expect: 200.5")), status: 2,
            contains: ["must be an HTTP status (100–599), got '200.5'"]),
        Row(
            name: "port 99999", input: .file(flow("url: \"http://x.test:99999/\"")), status: 2,
            contains: ["has port 99999; a port is 1 to 65535"]),

        // Hosts, headers, URLs.
        Row(
            name: "hosts key with a scheme", input: .file("hosts: { \"http://x\": 1 }\n" + steps(1) { _ in nil }),
            status: 2, contains: ["'http://x' is not a host"]),
        Row(
            name: "empty hosts key", input: .file("hosts: { \"\": 1 }\n" + steps(1) { _ in nil }), status: 2,
            contains: ["'' is not a host"]),
        Row(
            name: "hosts key a:b:c", input: .file("hosts: { \"a:b:c\": 1 }\n" + steps(1) { _ in nil }), status: 2,
            contains: ["'a:b:c' is not a host"]),
        Row(
            name: "header value with a line break", input: .file(flow("headers: { X-A: \"a\\r\\nX-Evil: 1\" }")),
            status: 2, contains: ["header 'X-A' has a line break"]),
        Row(
            name: "header name with a space", input: .file(flow("headers: { \"X A\": b }")), status: 2,
            contains: ["'X A' is not a valid header name"]),
        Row(
            name: "file:// URL", input: .file(flow("url: \"file:///etc/passwd\"")), status: 2,
            contains: ["has the scheme 'file'; only http and https are supported"]),
        Row(
            name: "URL with a space", input: .file(flow("url: \"http://x.test/a b\"")), status: 2,
            contains: ["contains a space or a line break"]),
        Row(name: "empty URL", input: .file(flow("url: \"\"")), status: 2, contains: ["is not an absolute URL"]),
        Row(
            name: "non-ASCII id and URL",
            input: .file("steps:\n  - id: café\n    url: \"http://bücher.example/ü?q=ä\"\n"), status: 0,
            contains: ["ok — 1 step"]),

        // Ids and references.
        Row(
            name: "control characters, ESC and U+202E in an id are escaped",
            input: .file("steps:\n  - id: \"a\\e[2Jb\\u202Ec\\u0007\"\n    url: \"http://x.test\"\n"),
            status: 2, contains: [#"'a\u{1B}[2Jb\u{202E}c\u{7}'"#], excludes: ["\u{1B}", "\u{202E}", "\u{07}"]
        ),
        // Ids that would print like another: refused, and quoted escaped (issue 32).
        Row(
            name: "a zero-width space in an id",
            input: .file("steps:\n  - id: \"a\\u200Bb\"\n    url: \"http://x.test\"\n"), status: 2,
            contains: [#"got 'a\u{200B}b' (U+200B is invisible)"#], excludes: ["a\u{200B}b"]),
        Row(
            name: "a Cyrillic 'а' in a Latin id, and a needs that names the Latin one",
            input: .file(
                "steps:\n  - id: \"\u{430}dmin\"\n    url: \"http://x.test\"\n  - id: b\n    url: \"http://x.test\"\n    needs: [admin]\n"
            ), status: 2,
            contains: [
                #"step id '\u{430}dmin' mixes letters of Cyrillic and Latin, which look alike"#,
                #"needs 'admin', which is not a step (did you mean '\u{430}dmin'?)"#,
            ], excludes: ["\u{430}"]),
        Row(
            name: "a reference to a step whose id has a Greek letter",
            input: .file(flow("url: \"http://x.test/{{\u{3BF}ne.x}}\"")), status: 2,
            contains: [#"names step '\u{3BF}ne', which does not exist"#], excludes: ["\u{3BF}"]),
        Row(
            name: "ids in one script, whatever it is, are fine",
            input: .file(
                "steps:\n  - id: \"\u{30B9}\u{30C6}\u{30C3}\u{30D7}\"\n    url: \"http://x.test\"\n  - id: d\u{E9}j\u{E0}-vu_2\n    url: \"http://x.test\"\n"
            ), status: 0, contains: ["ok — 2 steps"]),
        Row(
            name: "id that is a list", input: .file("steps:\n  - id: [x]\n    url: \"http://x.test\"\n"), status: 2,
            contains: ["field 'steps[0].id': must be text, got a list"], excludes: ["has no 'id'"]),
        Row(
            name: "id that is a mapping", input: .file("steps:\n  - id: {a: 1}\n    url: \"http://x.test\"\n"),
            status: 2, contains: ["must be text, got a mapping"], excludes: ["has no 'id'"]),
        Row(
            name: "missing id", input: .file("steps:\n  - url: \"http://x.test\"\n"), status: 2,
            contains: ["step 1 has no 'id'"]),
        Row(
            name: "id 'vars' is reserved",
            input: .file(steps(1) { _ in nil }.replacingOccurrences(of: "id: s0", with: "id: vars")), status: 2,
            contains: ["'vars' is reserved for variables"]),
        Row(
            name: "duplicate ids", input: .file("steps:\n" + step("a") + step("a")), status: 2,
            contains: ["duplicate step id 'a' (first at line 2)"]),
        Row(
            name: "needs an unknown step", input: .file("steps:\n" + step("login") + step("b", "needs: logni")),
            status: 2, contains: ["needs 'logni', which is not a step (did you mean 'login'?)"]),
        Row(name: "needs itself", input: .file(flow("needs: a")), status: 2, contains: ["step 'a' needs itself"]),
        Row(
            name: "unknown variable",
            input: .file("vars: { base: \"http://x.test\" }\nsteps:\n  - { id: a, url: \"{{vars.bsae}}/\" }\n"),
            status: 2, contains: ["unknown variable 'bsae' in {{vars.bsae}} (did you mean 'base'?)"]),
        Row(
            name: "unknown --var name is a warning naming the closest",
            input: .file(
                "vars: { base: \"http://x.test\" }\nsteps:\n  - { id: a, url: \"{{vars.base}}/\" }\n",
                extra: ["--var", "bsae=http://y.test"]),
            status: 0,
            contains: ["warning: --var bsae: no template uses {{vars.bsae}} (did you mean 'base'?)", "ok — 1 step"]
        ),
        Row(
            name: "--var without =", input: .file(flow(), extra: ["--var", "base"]), status: 2,
            contains: ["--var 'base' must be NAME=VALUE"]),
        Row(name: "unquoted template", input: .file(flow("url: {{vars.base}}")), status: 2, contains: ["quote it"]),
        Row(
            name: "capture name with a space", input: .file(flow("captures: { \"a b\": $.a }")), status: 2,
            contains: ["capture name 'a b' may use only"]),
        Row(
            name: "capture path without $", input: .file(flow("captures: { t: token }")), status: 2,
            contains: ["must start with '$'"]),
        Row(
            name: "for_each not quoted", input: .file(flow("for_each: 3")), status: 2,
            contains: ["must be a quoted {{STEP.CAPTURE}}"]),
        Row(
            name: "auth failure status [200] validates",
            input: .file(
                "auth:\n  login: { url: \"http://x.test/login\", token: $.t }\n  failure: { status: [200] }\n"
                    + steps(1) { _ in nil }), status: 0, contains: ["ok — 1 step", "auth"]),
        Row(
            name: "an invalid expect shared by aliases is reported once",
            input: .file("steps:\n" + step("a", "expect: &x [a]") + step("b", "expect: *x") + step("c", "expect: *x")),
            status: 2, contains: ["must be an HTTP status (100–599), got 'a'"], once: ["got 'a'"]),

        // Wrong types.
        Row(
            name: "name is a list", input: .file("name: [x]\n" + steps(1) { _ in nil }), status: 2,
            contains: ["field 'name': must be text, got a list"]),
        Row(
            name: "vars is a list", input: .file("vars: [x]\n" + steps(1) { _ in nil }), status: 2,
            contains: ["field 'vars': must be a mapping (name: value), got a list"]),
        Row(
            name: "limit is quoted text", input: .file("limit: \"4\"\n" + steps(1) { _ in nil }), status: 2,
            contains: ["got '4' (quoted text)"]),
        Row(
            name: "failure is neither", input: .file("failure: maybe\n" + steps(1) { _ in nil }), status: 2,
            contains: ["must be 'continue' or 'stop', got 'maybe'"]),
        Row(
            name: "follow_redirects is not a boolean", input: .file(flow("follow_redirects: maybe")), status: 2,
            contains: ["must be true or false, got 'maybe'"]),
        Row(
            name: "steps is a mapping", input: .file("steps: { a: 1 }\n"), status: 2,
            contains: ["must be a list of steps"]),
        Row(
            name: "steps is empty", input: .file("steps: []\n"), status: 2,
            contains: ["is empty; a workflow needs at least one step"]),
        Row(
            name: "a step is text", input: .file("steps:\n  - \"just text\"\n"), status: 2,
            contains: ["field 'steps[0]': must be a mapping (key: value), got 'just text'"]),
        Row(
            name: "method is a list", input: .file(flow("method: [GET]")), status: 2,
            contains: ["field 'method': must be text, got a list"]),
        Row(
            name: "method with a space", input: .file(flow("method: \"GE T\"")), status: 2,
            contains: ["'GE T' is not an HTTP method"]),
        Row(
            name: "headers is a list", input: .file(flow("headers: [a]")), status: 2,
            contains: ["field 'headers': must be a mapping (name: value), got a list"]),
        Row(
            name: "captures is a list", input: .file(flow("captures: [a]")), status: 2,
            contains: ["field 'captures': must be a mapping (name: value), got a list"]),
        Row(
            name: "timeout is a list", input: .file(flow("timeout: [1]")), status: 2,
            contains: ["must be a duration such as 500ms, 5s, 2m or a number of seconds, got a list"]),
        Row(
            name: "auth is not a boolean", input: .file(flow("auth: yes please")), status: 2,
            contains: ["field 'auth': must be true or false, got 'yes please'"]),
        Row(
            name: "a body number YAML has but JSON does not", input: .file(flow("body: { n: .inf }")), status: 2,
            contains: ["'.inf' is not a JSON number"]),

        // Unknown fields, with the closest known one.
        Row(
            name: "unknown top-level field", input: .file("stepz: []\n"), status: 2,
            contains: ["unknown field 'stepz'", "did you mean 'steps'?"]),
        Row(
            name: "unknown step field", input: .file(flow("retyr: 2")), status: 2,
            contains: ["unknown field 'retyr' in step 'a'; did you mean 'retry'?"]),
        Row(
            name: "unknown auth field",
            input: .file("auth:\n  logn: { url: \"http://x.test\" }\n" + steps(1) { _ in nil }), status: 2,
            contains: ["unknown field 'logn'", "did you mean 'login'?"]),

        // Files: what is in them and what they are.
        Row(name: "empty file", input: .file(""), status: 2, contains: ["error: empty file"]),
        Row(name: "only a comment", input: .file("# nothing\n"), status: 2, contains: ["the file is empty"]),
        Row(
            name: "a YAML null", input: .file("~\n"), status: 2,
            contains: ["must be a mapping (key: value), got nothing (null)"]),
        Row(
            name: "a list at the top", input: .file("- a\n- b\n"), status: 2,
            contains: ["must be a mapping (key: value), got a list"]),
        Row(name: "empty path", input: .arguments(["validate", ""]), status: 2, contains: ["no file given"]),
        Row(
            name: "no such file", input: .arguments(["validate", "/nonexistent/flow.yaml"]), status: 2,
            contains: ["/nonexistent/flow.yaml: error: no such file"]),
        Row(name: "a directory", input: .directory, status: 2, contains: ["is a directory, not a workflow file"]),
        Row(
            name: "not UTF-8", input: .bytes([0x73, 0x74, 0xFF, 0xFE, 0x00, 0xC3]), status: 2,
            contains: ["is not UTF-8 text"]),
        Row(name: "garbage binary", input: .bytes(garbage), status: 2, contains: ["is not UTF-8 text"]),
        Row(
            name: "tabs for indentation", input: .file("steps:\n\t- id: a\n\t  url: \"http://x.test\"\n"), status: 2,
            contains: ["not valid YAML or JSON"]),
        Row(
            name: "an unclosed quote", input: .file("steps:\n  - id: \"a\n"), status: 2,
            contains: ["not valid YAML or JSON"]),
        Row(
            name: "a byte-order mark", input: .bytes([0xEF, 0xBB, 0xBF] + Array(steps(1) { _ in nil }.utf8)), status: 0,
            contains: ["ok — 1 step"]),
        Row(
            name: "CRLF line endings",
            input: .file(steps(2) { $0 == 1 ? 0 : nil }.replacingOccurrences(of: "\n", with: "\r\n")), status: 0,
            contains: ["ok — 2 steps, 1 dependency"]),
        Row(
            name: "a JSON workflow",
            input: .file(
                #"{"limit": 2, "steps": [{"id": "a", "url": "http://x.test"}, {"id": "b", "url": "http://x.test", "needs": ["a"]}]}"#
            ), status: 0, contains: ["ok — 2 steps, 1 dependency", "limit 2"]),
        Row(
            name: "a JSON workflow with a wrong type",
            input: .file(#"{"steps": [{"id": "a", "url": "http://x.test", "retry": "twice"}]}"#), status: 2,
            contains: ["field 'retry': must be a number of attempts ≥ 1, got 'twice'"]),

        // Huge values: quoted by their first 200 characters and their length, never whole.
        Row(
            name: "huge id", input: .file("steps:\n  - id: \"\(huge)!\"\n    url: \"http://x.test\"\n"), status: 2,
            contains: ["step ids may use only", hugeNote.replacingOccurrences(of: "100000", with: "100001")]),
        Row(
            name: "huge URL", input: .file(flow("url: \"\(huge)\"")), status: 2,
            contains: ["is not an absolute URL", hugeNote]),
        Row(
            name: "huge method", input: .file(flow("method: \"\(huge) \"")), status: 2,
            contains: ["is not an HTTP method", "… (100001 characters)"]),
        Row(
            name: "huge header value", input: .file(flow("headers: { X-A: \"{{\(huge)\" }")), status: 2,
            contains: ["without a closing '}}'", hugeNote.replacingOccurrences(of: "100000", with: "100002")]),
        Row(
            name: "huge text where a number goes", input: .file(flow("expect: \"\(huge)\"")), status: 2,
            contains: ["must be an HTTP status", hugeNote]),
        Row(
            name: "huge unclosed template in a body", input: .file(flow("body: [\"{{\(huge)\"]")), status: 2,
            contains: ["field 'body[0]'", "without a closing '}}'", "… (100002 characters)"]),
        Row(
            name: "huge unknown variable", input: .file(flow("url: \"http://x.test/{{vars.\(huge)}}\"")), status: 2,
            contains: ["unknown variable '", hugeNote]),
        // An explicit key (`? KEY`): YAML refuses a plain key longer than 1,024 characters.
        Row(
            name: "huge unknown field", input: .file(flow("? \(huge)", ": 1")), status: 2,
            contains: ["unknown field '", hugeNote]),
        Row(
            name: "huge --var value without =", input: .file(flow(), extra: ["--var", huge]), status: 2,
            contains: ["must be NAME=VALUE", hugeNote]),
        Row(
            name: "huge unknown --var name", input: .file(flow(), extra: ["--var", "\(huge)=1"]), status: 0,
            contains: ["warning: --var", hugeNote]),
        Row(
            name: "huge unknown option", input: .arguments(["validate", "x.yaml", "--\(huge)"]), status: 2,
            contains: ["Unknown option", "… (100002 characters)"]),

        // Usage errors exit 2, as the documentation says (not ArgumentParser's 64); help and version 0.
        Row(
            name: "unknown option", input: .arguments(["validate", "--bogus", "x.yaml"]), status: 2,
            contains: ["Unknown option '--bogus'", "Usage: orchestra validate"]),
        Row(
            name: "missing argument", input: .arguments(["validate"]), status: 2,
            contains: ["Missing expected argument '<file>'"]),
        Row(
            name: "bad option value", input: .arguments(["graph", "x.yaml", "--format", "svg"]), status: 2,
            contains: ["The value 'svg' is invalid for '--format <format>'"]),
        Row(
            name: "unknown subcommand argument", input: .arguments(["run", "a.yaml", "b.yaml"]), status: 2,
            contains: ["Unexpected argument 'b.yaml'"]),
        Row(name: "--help", input: .arguments(["run", "--help"]), status: 0, contains: ["USAGE: orchestra run"]),
        Row(name: "--version", input: .arguments(["--version"]), status: 0, contains: ["0."]),
        Row(
            name: "demo --speed -1 names the range", input: .arguments(["demo", "--speed", "-1"]), status: 2,
            contains: ["--speed: must be a number from 0.01 to 1000, got '-1'"], excludes: ["Missing value"]),
        Row(
            name: "demo --port -5", input: .arguments(["demo", "--serve", "--port", "-5"]), status: 2,
            contains: ["--port: must be 0…65535, got -5"]),
        // Other bad demo options (--speed 1e-300, --url ftp://…, --port 70000) are DemoCommandTests.badOptions.

        // Input files are read up to a limit (256 MB; lowered to 1 MB here): an endless file is refused, naming it.
        Row(
            name: "/dev/zero as the workflow", input: .arguments(["validate", "/dev/zero"]), status: 2,
            contains: ["/dev/zero: error: larger than 1 MB (the limit for an input file)"], environment: smallInputLimit
        ),
        Row(
            name: "--data /dev/zero", input: .file(flow(), extra: ["--data", "/dev/zero"]), status: 2,
            contains: ["--data: /dev/zero: error: larger than 1 MB (the limit for an input file)"],
            environment: smallInputLimit),
        Row(
            name: "--vars-file /dev/zero", input: .file(flow(), extra: ["--vars-file", "/dev/zero"]), status: 2,
            contains: ["--vars-file: /dev/zero: error: larger than 1 MB (the limit for an input file)"],
            environment: smallInputLimit),
        Row(
            name: "a 2 MB workflow over a 1 MB limit", input: .file("# " + String(repeating: "x", count: 2 << 20)),
            status: 2, contains: ["error: larger than 1 MB (the limit for an input file)"],
            environment: smallInputLimit),
        Row(
            name: "an empty --data file", input: .file(flow(), extra: ["--data", emptyDataFile]), status: 2,
            contains: ["is empty: expected a header line (CSV) or a list of objects (JSON)"],
            excludes: ["needs at least 'steps'"]),
        Row(
            name: "10,000 --var, nearly all unused: 20 warnings and a count",
            input: .file(
                flow("url: \"http://x.test/{{vars.v9999}}\""),
                extra: (0..<10_000).flatMap { ["--var", "v\($0)=\($0)"] } + ["--var=v0=last"]),
            status: 0, contains: ["… and 9979 more --var that no template uses", "ok — 1 step"]),
    ]

    /// The input file limit lowered to 1 MiB (`ORCHESTRA_INPUT_FILE_LIMIT`), for the rows that read `/dev/zero`.
    static let smallInputLimit = ["ORCHESTRA_INPUT_FILE_LIMIT": "1048576"]

    /// An empty `.csv` file.
    static let emptyDataFile: String = {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent(
            "orchestra-hostile-empty-\(UUID().uuidString).csv")
        _ = FileManager.default.createFile(atPath: path.path, contents: Data())
        return path.path
    }()

    /// Writes `data` to a fresh file and returns its path.
    static func file(_ data: Data, name: String = "flow.yaml") throws -> String {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent(
            "orchestra-hostile-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let url = folder.appendingPathComponent(name)
        try data.write(to: url)
        return url.path
    }

    @Test(
        "each hostile input gets its exit status and a message that says what is wrong, bounded in size",
        arguments: rows)
    func hostileInput(_ row: Row) async throws {
        let arguments: [String]
        switch row.input {
        case .file(let text, let extra): arguments = ["validate", try Self.file(Data(text.utf8))] + extra
        case .bytes(let bytes): arguments = ["validate", try Self.file(Data(bytes))]
        case .directory: arguments = ["validate", FileManager.default.temporaryDirectory.path]
        case .arguments(let given): arguments = given
        }
        let output = try await OrchestraExecutable.run(arguments, environment: row.environment)
        let text = output.stdout + output.stderr
        // The description quotes the arguments: a huge one is shown by its length.
        let shown = "\(row.name): exit \(output.status)\n\(MessageText.preview(text))"
        #expect(output.status == row.status, "\(shown)")
        for fragment in row.contains {
            #expect(text.contains(fragment), "expected '\(MessageText.preview(fragment))' in \(shown)")
        }
        for fragment in row.once {
            #expect(text.components(separatedBy: fragment).count == 2, "expected '\(fragment)' once in \(shown)")
        }
        for fragment in row.excludes {
            #expect(!text.contains(fragment), "did not expect '\(fragment)' in \(shown)")
        }
        #expect(text.count < 8_000, "no value is echoed whole: \(text.count) characters in \(shown)")
    }
}

/// Output shown in a failure message: its start, if it is long.
enum MessageText {
    static func preview(_ text: String) -> String {
        text.count > 3_000 ? String(text.prefix(3_000)) + "… (\(text.count) characters)" : text
    }
}
