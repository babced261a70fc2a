/// A list of values passed to SQL as one JSON array argument and read back with `json_each`.
///
/// A statement with an `IN (?, ?, ...)` list of varying length must be compiled for every length,
/// and compiling (with GRDB's authorizer and region tracking) cost more than running the query
/// itself for most searches. With the list as a single argument the statement is compiled once per
/// connection and cached. Pure functions; safe from any thread.
enum SQLList {
    /// `[1,2,3]`.
    static func json(_ values: some Sequence<Int64>) -> String {
        var text = "["
        var first = true
        for value in values {
            if !first { text += "," }
            first = false
            text += String(value)
        }
        return text + "]"
    }

    /// `["a","b"]`, with quotes, backslashes and control characters escaped as JSON requires.
    static func json(_ values: some Sequence<String>) -> String {
        var text = "["
        var first = true
        for value in values {
            if !first { text += "," }
            first = false
            text += "\""
            for scalar in value.unicodeScalars {
                switch scalar {
                case "\"": text += "\\\""
                case "\\": text += "\\\\"
                case let control where control.value < 0x20:
                    let hex = String(control.value, radix: 16)
                    text += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
                default: text.unicodeScalars.append(scalar)
                }
            }
            text += "\""
        }
        return text + "]"
    }
}
