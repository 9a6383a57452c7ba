import Foundation
import TestSupport
import Testing

@testable import OrchestraWorkflow

/// What a failed schema check says, and the bounds on a hostile schema or value.
@Suite("JSON Schema: messages and bounds", .timeLimit(.minutes(1)), .takesTurns)
struct JSONSchemaTests {
    static func schema(_ text: String) throws -> JSONSchema {
        try JSONSchema(data: Data(text.utf8), name: "test")
    }

    static func failures(_ schema: String, _ value: String) throws -> [String] {
        try JSONSchemaValidator(schema: try Self.schema(schema)).validate(JSONValue(parsing: Data(value.utf8)))
            .map(\.description)
    }

    static let orders = #"""
        {
          "type": "object",
          "required": ["orders"],
          "properties": {
            "orders": { "type": "array", "items": { "$ref": "#/$defs/order" }, "maxItems": 5 }
          },
          "$defs": {
            "order": {
              "type": "object",
              "required": ["id", "state"],
              "properties": {
                "id": { "type": "integer" },
                "state": { "enum": ["open", "paid"] },
                "email": { "type": "string", "pattern": "^[^@]+@[^@]+$" },
                "total": { "type": "number", "minimum": 0, "multipleOf": 0.01 }
              },
              "additionalProperties": false
            }
          }
        }
        """#

    @Test("each failure names the value's JSON pointer and the keyword")
    func messages() throws {
        let failures = try Self.failures(
            Self.orders,
            #"{"orders":[{"id":"7","state":"open"},{"id":8,"state":"lost","total":1.005},{"id":9,"state":"paid","email":"x","x":1}]}"#
        )
        #expect(
            failures == [
                "/orders/0/id: expected integer, got string",
                #"/orders/1/state: expected one of ["open","paid"] (enum), got "lost""#,
                "/orders/1/total: expected a multiple of 0.01 (multipleOf), got 1.005",
                #"/orders/2/email: "x" does not match the pattern "^[^@]+@[^@]+$""#,
                "/orders/2: property 'x' is not allowed (additionalProperties)",
            ])
        #expect(try Self.failures(Self.orders, "[]") == ["(root): expected object, got array"])
        #expect(try Self.failures(Self.orders, "{}") == ["(root): required property 'orders' is missing"])
        #expect(try Self.failures(Self.orders, #"{"orders":[{"id":1.0,"state":"open","total":12.30}]}"#) == [])
    }

    @Test("the applicators say which keyword failed")
    func applicators() throws {
        #expect(
            try Self.failures(#"{"anyOf":[{"type":"string"},{"type":"integer"}]}"#, "1.5")
                == [
                    "(root): matches none of the 2 schemas of anyOf (0: expected string, got number; 1: expected integer, got number)"
                ])
        #expect(
            try Self.failures(
                #"{"oneOf":[{"required":["a"]},{"properties":{"b":{"type":"string"}},"required":["b"]}]}"#, #"{"b":1}"#)
                == [
                    "(root): matches none of the 2 schemas of oneOf (0: required property 'a' is missing; 1: /b: expected string, got integer)"
                ])
        #expect(
            try Self.failures(#"{"oneOf":[{"minimum":1},{"maximum":5}]}"#, "3")
                == ["(root): matches more than one schema of oneOf (/oneOf/0 and /oneOf/1), expected exactly one"])
        #expect(try Self.failures(#"{"not":{"type":"null"}}"#, "null") == ["(root): matches the schema of not"])
        #expect(
            try Self.failures(#"{"contains":{"const":3},"minContains":2}"#, "[3,1]")
                == ["(root): 1 element match the schema of contains, expected at least 2 (minContains)"])
        #expect(
            try Self.failures(#"{"uniqueItems":true}"#, #"[1,{"a":2},1.0]"#)
                == ["(root): elements 0 and 2 are equal (uniqueItems): 1.0"])
        #expect(
            try Self.failures(#"{"uniqueItems":true}"#, #"[[1],[2],[3],[2]]"#)
                == ["(root): elements 1 and 3 are equal (uniqueItems): [2]"])
        #expect(
            try Self.failures(#"{"if":{"minimum":10},"then":{"multipleOf":10},"else":{"const":1}}"#, "15")
                == ["(root): expected a multiple of 10 (multipleOf), got 15"])
        #expect(
            try Self.failures(#"{"dependentRequired":{"card":["cvc"]}}"#, #"{"card":1}"#)
                == ["(root): property 'cvc' is missing, required with 'card' (dependentRequired)"])
        #expect(try Self.failures("false", "1") == ["(root): no value is allowed here (the schema is false)"])
        #expect(
            try Self.failures(#"{"properties":{"a/b":{"type":"string"}}}"#, #"{"a/b":1}"#)
                == ["/a~1b: expected string, got integer"])
    }

    /// Distinct arrays and objects of one length are not compared pair by pair: the work is
    /// linear in the list (it was quadratic: 20,000 objects `{"id":N}` gave up at the checks'
    /// time limit), and equal ones are still found whatever their members' order or numbers'
    /// spelling.
    @Test func uniqueItemsIsLinearInTheListAndFindsEqualObjectsInAnyOrder() throws {
        let validator = JSONSchemaValidator(
            schema: try Self.schema(#"{"uniqueItems":true}"#), deadline: .now + .seconds(600), limit: .seconds(600))
        let count = 3_000
        let objects = (0..<count).map { #"{"id":\#($0),"tags":["t\#($0 % 7)"]}"# }
        let distinct = try validator.evaluate(
            JSONValue(parsing: Data(("[" + objects.joined(separator: ",") + "]").utf8)))
        #expect(distinct.failures.isEmpty)
        #expect(distinct.work < 4 * count, "work \(distinct.work) for \(count) elements")
        let repeated = objects + [#"{"tags":["t3"],"id":10.0}"#]
        let found = try validator.evaluate(JSONValue(parsing: Data(("[" + repeated.joined(separator: ",") + "]").utf8)))
        #expect(
            found.failures.map(\.description) == [
                #"(root): elements 10 and 3000 are equal (uniqueItems): {"tags":["t3"],"id":10.0}"#
            ])
        #expect(
            JSONSchemaEvaluation.structuralHash(try JSONValue(parsing: Data(#"{"a":1,"b":[2.0,"x"]}"#.utf8)))
                == JSONSchemaEvaluation.structuralHash(try JSONValue(parsing: Data(#"{"b":[2,"x"],"a":1.0}"#.utf8))))
    }

    @Test("the evaluation stops at one failure more than a message lists")
    func failuresAreCapped() throws {
        let values = "[" + (0..<1_000).map { "\"\($0)\"" }.joined(separator: ",") + "]"
        let failures = try Self.failures(#"{"items":{"type":"integer"}}"#, values)
        #expect(failures.count == JSONSchema.maximumFailures + 1)
        #expect(failures.first == "/0: expected integer, got string")
    }

    @Test("a $ref that refers to itself without reading into the value stops at the depth bound, with a message")
    func referenceCycle() throws {
        for text in [
            ##"{"$ref":"#"}"##,
            ##"{"$defs":{"a":{"$ref":"#/$defs/b"},"b":{"allOf":[{"$ref":"#/$defs/a"}]}},"$ref":"#/$defs/a"}"##,
        ] {
            let schema = try Self.schema(text)
            let error = #expect(throws: JSONSchemaValidator.Stopped.self) {
                try JSONSchemaValidator(schema: schema).validate(.integer(1))
            }
            #expect(error?.description.contains("more than 128 schemas inside each other") == true, "\(error as Any)")
        }
    }

    @Test("a recursive schema on a value nested 500 deep stops at the bound on a task's stack, without a crash")
    func deepValue() async throws {
        let schema = try Self.schema(##"{"type":"object","properties":{"next":{"$ref":"#"}}}"##)
        var text = "{}"
        for _ in 0..<500 { text = #"{"next":\#(text)}"# }
        let value = try JSONValue(parsing: Data(text.utf8))
        let outcome = await Task.detached { () -> String in
            do {
                return "\(try JSONSchemaValidator(schema: schema).validate(value))"
            } catch let error as JSONSchemaValidator.Stopped {
                return error.description
            } catch {
                return "\(error)"
            }
        }.value
        #expect(outcome.hasPrefix("/next/next/"), "\(outcome)")
        #expect(outcome.contains("more than 128 schemas inside each other"))
        // 60 levels are within the bound.
        var shallow = "{}"
        for _ in 0..<60 { shallow = #"{"next":\#(shallow)}"# }
        #expect(try JSONSchemaValidator(schema: schema).validate(JSONValue(parsing: Data(shallow.utf8))) == [])
    }

    @Test("a schema whose anyOfs multiply the work gives up at the deadline", .ownThread)
    func exponentialWork() throws {
        // Each level tries both branches, 2^40 paths in all, and fails on every one.
        var defs: [String] = []
        for level in 0..<40 {
            defs.append(
                ##""l\##(level)":{"anyOf":[{"$ref":"#/$defs/l\##(level + 1)"},{"$ref":"#/$defs/l\##(level + 1)"}]}"##)
        }
        defs.append(#""l40":{"type":"string"}"#)
        let schema = try Self.schema(##"{"$defs":{\##(defs.joined(separator: ","))},"$ref":"#/$defs/l0"}"##)
        let limit = Duration.milliseconds(50)
        let validator = JSONSchemaValidator(schema: schema, deadline: .now + limit, limit: limit)
        let error = #expect(throws: JSONSchemaValidator.Stopped.self) { try validator.validate(.integer(1)) }
        #expect(error?.description == "the schema check gave up after 50 ms (the time a response's checks may take)")
    }

    @Test("a cancelled task stops the check")
    func cancellation() async throws {
        let schema = try Self.schema(#"{"items":{"type":"integer"}}"#)
        let value = JSONValue.array(Array(repeating: .integer(1), count: 10_000))
        let task = Task.detached { () -> Bool in
            withUnsafeCurrentTask { $0?.cancel() }
            do {
                _ = try JSONSchemaValidator(schema: schema).validate(value)
                return false
            } catch let error as JSONSchemaValidator.Stopped {
                return error.isCancellation
            } catch {
                return false
            }
        }
        #expect(await task.value)
    }

    @Test(
        "a schema that cannot be used is refused naming the keyword's JSON pointer",
        arguments: [
            (#"{"type":"integr"}"#, "/type: unknown type 'integr'; did you mean 'integer'?"),
            (
                #"{"properties":{"id":{"minLength":-1}}}"#,
                "/properties/id/minLength: must be a whole number, 0 or more, got -1"
            ),
            (#"{"required":"id"}"#, #"/required: must be a list of property names, got "id""#),
            (#"{"allOf":[]}"#, "/allOf: must be a non-empty list of schemas, got []"),
            (#"{"items":3}"#, "/items: a schema is an object or true or false, got 3"),
            (#"{"pattern":"("}"#, "/pattern: '(' is not a regular expression"),
            (##"{"$ref":"#/$defs/nothing"}"##, "/$ref: '#/$defs/nothing' points to nothing in the schema"),
            (#"{"$ref":"other.json#/a"}"#, "/$ref: 'other.json#/a' is not supported"),
            (#"{"unevaluatedProperties":false}"#, "/unevaluatedProperties: 'unevaluatedProperties' is not supported"),
            (#"{"multipleOf":0}"#, "/multipleOf: must be a number greater than 0, got 0"),
            (
                ##"{"$defs":{"a":{"$id":"a.json","type":"string"}},"$ref":"#/$defs/a"}"##,
                "/$defs/a/$id: a $id below the root is not supported in a schema that uses $ref"
            ),
            ("[1]", "a schema is an object or true or false, got [1]"),
            (#"{"type":"object",}"#, "is not JSON: line 1, column 18"),
        ])
    func refused(_ text: String, _ message: String) throws {
        let error = #expect(throws: JSONSchemaProblem.self) { try Self.schema(text) }
        #expect(error?.description.hasPrefix(message) == true, "\(error as Any)")
    }

    @Test("unknown keywords and annotations are ignored; format is not checked")
    func unknownKeywords() throws {
        #expect(try Self.failures(#"{"x-internal":{"type":7},"title":"T","format":"email"}"#, #""not an email""#) == [])
    }

    @Test("a schema file's document is copied into plain lists, not read through views each time")
    func materialized() throws {
        let schema = try Self.schema(#"{"properties":{"a":{"enum":[1,[2]]}},"required":["a"]}"#)
        guard case .object(let members) = schema.root, case .object(let properties) = members["properties"] else {
            Issue.record("\(schema.root)")
            return
        }
        #expect(members.parsed == nil && properties.parsed == nil)
        #expect(schema.root.text == #"{"properties":{"a":{"enum":[1,[2]]}},"required":["a"]}"#)
    }

    @Test("a schema file larger than 1 MiB is refused")
    func fileSize() throws {
        let text = #"{"description":""# + String(repeating: "a", count: JSONSchema.maximumFileSize) + #""}"#
        let error = #expect(throws: JSONSchemaProblem.self) { try Self.schema(text) }
        #expect(error?.message == "is larger than 1 MB (the limit for a schema file)")
    }
}
