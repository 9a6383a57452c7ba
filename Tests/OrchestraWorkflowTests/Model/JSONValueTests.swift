import Foundation
import OrchestraWorkflow
import TestSupport
import Testing

/// JSON text read and written back exactly: numbers as written, members in order, errors
/// that say what and where.
@Suite("JSON values", .timeLimit(.minutes(1)), .takesTurns)
struct JSONValueTests {
    static func parsed(_ text: String) throws(JSONSyntaxError) -> JSONValue {
        try JSONValue(parsing: Data(text.utf8))
    }

    @Test(arguments: [
        "12345678901234567890", "-12345678901234567890", "-0.0", "-0", "1.0", "1.50", "1e400", "-1e400",
        "1e-400", "0.1", "1E5", "2.5e-3", "0", "42", "-7", "9223372036854775807", "9223372036854775808",
    ])
    func numbersRoundTripExactly(_ text: String) throws {
        #expect(try Self.parsed(text).text == text)
        #expect(try Self.parsed("[\(text)]").text == "[\(text)]")
        #expect(JSONNumber(text)?.text == text)
    }

    /// A message quotes the start of a value: that start is written, not the whole text.
    @Test func theStartOfALargeValuesTextIsWrittenWithoutTheRest() throws {
        let large = try Self.parsed(
            "[" + (0..<100_000).map { #"{"id":\#($0),"s":"x\\ny"}"# }.joined(separator: ",") + "]")
        let whole = large.text
        let (start, isComplete) = large.textPrefix(maximumBytes: 1_000)
        #expect(!isComplete)
        #expect(whole.hasPrefix(start))
        #expect(start.utf8.count > 1_000 && start.utf8.count < 1_100, "\(start.utf8.count) bytes")
        let small = try Self.parsed(#"{"a":[1,2.50,"\u00e9"]}"#)
        #expect(small.textPrefix(maximumBytes: 1_000) == (small.text, true))
        #expect(small.textPrefix(maximumBytes: small.text.utf8.count) == (small.text, true))
    }

    @Test func wholeNumbersThatIntHoldsAreIntegersAndTheRestKeepTheirText() throws {
        let value = try Self.parsed("[42,-7,12345678901234567890,1.0,-0,0.5]")
        #expect(
            value
                == .array([
                    .integer(42), .integer(-7), .number(JSONNumber("12345678901234567890")!),
                    .number(JSONNumber("1.0")!),
                    .number(JSONNumber("-0")!), .number(0.5),
                ]))
        #expect(value[3] != .integer(1), "1.0 is not written 1")
        #expect(JSONNumber("12345678901234567890")?.doubleValue == 12345678901234567890.0)
        #expect(JSONNumber("12345678901234567890")?.intValue == nil)
        #expect(JSONNumber("1e400")?.doubleValue == .infinity)
        #expect(JSONNumber("-12")?.intValue == -12)
        #expect(JSONNumber("1.0")?.intValue == nil && JSONNumber("1.0")?.isInteger == false)
    }

    @Test(arguments: ["01", "+1", ".5", "5.", "1e", "1e+", "-", "0x10", "1_000", "NaN", "Infinity", " 1", "1 ", ""])
    func numbersThatAreNotJSONAreRefused(_ text: String) {
        #expect(JSONNumber(text) == nil)
        #expect(JSONValue(numberText: text) == nil)
    }

    @Test func numbersMadeInCodeAreWrittenAsSwiftWritesThem() {
        #expect(JSONValue.number(0.5).text == "0.5")
        #expect(JSONValue.number(1.0).text == "1.0")
        #expect(JSONValue.number(-0.0).text == "-0.0")
        #expect(JSONValue.number(.nan) == .null && JSONValue.number(.infinity) == .null)
        #expect(JSONValue(numberText: "42") == .integer(42))
        #expect(JSONValue(numberText: "-0") == .number(JSONNumber("-0")!))
    }

    @Test func membersKeepTheirOrderAndEscapesAreDecoded() throws {
        let text = #"{"z":1,"a":{"y":[true,false,null],"b":"x"},"m":"é\u00e9\ud83d\ude00\n\"\\\/","z":2}"#
        let value = try Self.parsed(text)
        guard case .object(let members) = value else {
            Issue.record("not an object: \(value)")
            return
        }
        #expect(members.map(\.key) == ["z", "a", "m", "z"])
        #expect(value["z"] == .integer(1), "the first of a repeated key")
        #expect(value["m"] == .string("éé😀\n\"\\/"))
        #expect(value.text == #"{"z":1,"a":{"y":[true,false,null],"b":"x"},"m":"éé😀\n\"\\/","z":2}"#)
        #expect(
            try JSONValue(parsing: Data([0xEF, 0xBB, 0xBF] + Array("[1]".utf8))).text == "[1]",
            "a byte order mark is skipped")
    }

    @Test(arguments: [
        ("", "no JSON value at byte 0"),
        ("[1,]", "unexpected ']'; expected a JSON value at byte 3"),
        ("[1 2]", "unexpected '2'; expected ',' or ']' after an array element at byte 3"),
        (#"{"a" 1}"#, #"expected ':' after the object key "a" at byte 5"#),
        (#"{"a":1,}"#, "unexpected '}'; expected an object key in double quotes at byte 7"),
        (#"{"a":1}}"#, "unexpected '}' after the JSON value at byte 7"),
        ("[1", "the text ends inside an array at byte 2"),
        (#"{"a":"#, "the text ends inside an object at byte 5"),
        (#""abc"#, "a string is not closed at byte 0"),
        ("tru", "expected 'true' at byte 0"),
        ("01", "a number cannot have a leading zero at byte 0"),
        ("[1.]", "a number needs a digit after '.' at byte 3"),
        (#"["\x"]"#, #"unknown escape '\x' in a string at byte 2"#),
        (#""\ud800""#, #"lone surrogate '\uD800' in a string (not followed by a low surrogate) at byte 1"#),
        (#""\udc00""#, #"lone surrogate '\uDC00' in a string (no high surrogate before it) at byte 1"#),
        (#""\u12""#, #"'\u' must be followed by four hex digits at byte 1"#),
        ("\"a\tb\"", "a control character (U+0009) must be escaped in a string at byte 2"),
        ("nul", "expected 'null' at byte 0"),
        ("{'a':1}", "unexpected '''; expected an object key in double quotes at byte 1"),
    ])
    func invalidJSONIsRefusedWithWhatAndWhere(_ text: String, _ message: String) {
        #expect(throws: JSONSyntaxError.self) { try Self.parsed(text) }
        do {
            _ = try Self.parsed(text)
        } catch {
            #expect(error.description == message)
        }
    }

    @Test func invalidUTF8IsRefused() {
        let error = #expect(throws: JSONSyntaxError.self) { try JSONValue(parsing: Data([0x22, 0xC3, 0x28, 0x22])) }
        #expect(error?.description == "the string is not valid UTF-8 at byte 0")
    }

    /// 100,000 levels: refused with a message, no crash; the deepest accepted value is written
    /// and compared.
    @Test func deepNestingIsRefusedBeyondTheLimit() throws {
        for open in ["[", #"{"a":"#] {
            let close = open == "[" ? "]" : "}"
            let deep = String(repeating: open, count: 100_000) + "1" + String(repeating: close, count: 100_000)
            let error = #expect(throws: JSONSyntaxError.self) { try Self.parsed(deep) }
            #expect(error?.reason == "arrays and objects nested deeper than 512 levels")
            #expect(error?.offset == JSONValue.maxDepth * open.utf8.count)

            let deepest =
                String(repeating: open, count: JSONValue.maxDepth) + "1"
                + String(repeating: close, count: JSONValue.maxDepth)
            let value = try Self.parsed(deepest)
            #expect(value.text == deepest)
            #expect(value == (try Self.parsed(deepest)))
        }
    }

    @Test func prettyTextIndentsByTwoSpaces() throws {
        #expect(
            try Self.parsed(#"{"a":[1,{"b":null}],"c":{},"d":[]}"#).prettyText == """
                {
                  "a": [
                    1,
                    {
                      "b": null
                    }
                  ],
                  "c": {},
                  "d": []
                }
                """)
    }
}
