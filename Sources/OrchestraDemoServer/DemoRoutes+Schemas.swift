import Foundation
import HTTPTypes
import Hummingbird

/// JSON Schemas for `schema:` assertions (issue 37): `GET /schemas/{name}` serves a schema
/// (`application/schema+json`), and `GET /broken-users/{id}` a user that breaks the `user`
/// schema in several places (`/users/{id}` is one that matches it).
///
/// - `user`: what `/users/{id}` answers: `id` an integer ≥ 1, `name` a non-empty string,
///   `orders` a list of `{ "id": integer }` (through `$ref: "#/$defs/order"`), nothing else.
/// - `tree`: a node whose `children` are nodes (`$ref: "#"`), for recursive values.
extension DemoRoutes {
    static let schemas: [String: String] = [
        "user": #"""
        {
          "$schema": "https://json-schema.org/draft/2020-12/schema",
          "title": "User",
          "type": "object",
          "required": ["id", "name", "orders"],
          "properties": {
            "id": { "type": "integer", "minimum": 1 },
            "name": { "type": "string", "minLength": 1 },
            "orders": { "type": "array", "items": { "$ref": "#/$defs/order" } }
          },
          "additionalProperties": false,
          "$defs": {
            "order": {
              "type": "object",
              "required": ["id"],
              "properties": { "id": { "type": "integer" } }
            }
          }
        }
        """#,
        "tree": #"""
        {
          "$schema": "https://json-schema.org/draft/2020-12/schema",
          "title": "Tree",
          "type": "object",
          "required": ["name"],
          "properties": {
            "name": { "type": "string" },
            "children": { "type": "array", "items": { "$ref": "#" } }
          }
        }
        """#,
    ]

    static func addSchemaRoutes(to router: Router<BasicRequestContext>) {
        router.get("/schemas/:name") { _, context -> Response in
            let name = try context.parameters.require("name")
            guard let schema = schemas[name] else {
                throw HTTPError(
                    .notFound,
                    message: "no schema '\(name)': the schemas are \(schemas.keys.sorted().joined(separator: ", "))")
            }
            return Response(
                status: .ok, headers: [.contentType: "application/schema+json"],
                body: .init(byteBuffer: ByteBuffer(string: schema)))
        }
        router.get("/broken-users/:id") { _, context -> Response in
            let id = try context.parameters.require("id", as: Int.self)
            // `id` as text, `name` empty, an order without an id, one whose id is text, and a
            // member the schema does not allow.
            return json(
                "{\"id\":\"\(id)\",\"name\":\"\",\"orders\":[{\"id\":\"\(id * 100 + 1)\"},{}],\"admin\":true}")
        }
    }
}
