// A JSON-schema subset compiled to a regular expression (grammar_regex.h),
// so that a schema becomes the same kind of DFA and token masks as a regex.
//
// The subset (docs/constrained-decoding.md, "The JSON-schema subset"):
//   {"type": "object", "properties": {...}, "required": [...]}
//       every listed property, in the order written, each one once;
//       "required" may name only listed properties (all are emitted anyway)
//   {"type": "string", "minLength": m, "maxLength": n}   escapes \" \\ \/ \b
//       \f \n \r \t count as one character; \uXXXX is not produced
//   {"type": "integer", "minimum": a, "maximum": b}      (also exclusive*)
//   {"type": "number", "minimum": a, "maximum": b}  (also exclusive*;
//       bounds must be whole numbers; a bounded number has no exponent)
//   {"type": "boolean"}, {"type": "null"}
//   {"type": "array", "items": {...}, "minItems": m, "maxItems": n}
//   {"enum": [...]} / {"const": v}: strings, numbers, true, false, null
//   {"anyOf": [...]} and "type": [..] lists: one of the alternatives
// Objects and arrays nest at most kMaxSchemaDepth deep. Annotations
// (title, description, default, examples, $schema, $id,
// additionalProperties) are ignored; any other keyword is refused, so a
// schema never silently means less than it says.
// The output is compact JSON: no whitespace between tokens.
//
// Errors name the byte offset in the schema text and the reason:
// "json-schema: unknown type 'strnig' at 9".
#pragma once
#include <stddef.h>
#include <stdint.h>
#include "grammar_arena.h"
#include "llm_error.h"

namespace llm {

constexpr uint32_t kMaxSchemaBytes = 16384;
constexpr uint32_t kMaxSchemaNodes = 2048;   // JSON values in the schema text
constexpr uint32_t kMaxSchemaDepth = 4;      // objects and arrays inside each other

// Writes the regex for `schema` into out[0..cap) (not NUL-terminated) and
// returns its length. `scratch` holds the parsed schema (given back on return).
Result<size_t> json_schema_to_regex(const char* schema, size_t len, Arena& scratch, char* out, size_t cap);

}  // namespace llm
