// Values that reach a log line or an error message from outside (a request, Square, a webhook, the
// registry) may hold control characters: a newline in an OAuth callback's `error` or a webhook's
// `merchant_id` would forge a log line of its own. Every logged value goes through `LogText.escaped`
// (`EscapingLogHandler` does it for messages and metadata), and a value quoted in a message through
// `LogText.quoted`.

import Logging

public enum LogText {
    /// `text` with every control character (C0, DEL, C1, and the Unicode line and paragraph
    /// separators) written as an escape (`\n`, `\r`, `\t`, `\u{…}`), and a backslash doubled so an
    /// escape cannot be forged either. Text with none is returned as it is.
    public static func escaped(_ text: String) -> String {
        guard text.unicodeScalars.contains(where: needsEscape) else { return text }
        var out = ""
        out.reserveCapacity(text.utf8.count + 8)
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case "\\": out += "\\\\"
            case _ where isControl(scalar): out += "\\u{\(String(scalar.value, radix: 16))}"
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out
    }

    /// `text` escaped, in double quotes, at most `limit` characters of it (a long value is cut, saying so).
    public static func quoted(_ text: String, limit: Int = 100) -> String {
        let cut = text.count > limit ? String(text.prefix(limit)) + "…" : text
        return "\"" + escaped(cut).replacingOccurrences(of: "\"", with: "\\\"") + "\""
    }

    static func isControl(_ scalar: Unicode.Scalar) -> Bool {
        scalar.value < 0x20 || (0x7F...0x9F).contains(scalar.value) || scalar.value == 0x2028 || scalar.value == 0x2029
    }

    private static func needsEscape(_ scalar: Unicode.Scalar) -> Bool { isControl(scalar) || scalar == "\\" }
}

/// A log handler that escapes control characters in the message and every metadata value before
/// handing the line to `base` (the process's stream handler): one record is one line, whatever the
/// values hold.
public struct EscapingLogHandler: LogHandler {
    public var base: any LogHandler

    public init(_ base: any LogHandler) { self.base = base }

    public var logLevel: Logger.Level {
        get { base.logLevel }
        set { base.logLevel = newValue }
    }

    public var metadata: Logger.Metadata {
        get { base.metadata }
        set { base.metadata = newValue }
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { base[metadataKey: key] }
        set { base[metadataKey: key] = newValue }
    }

    public var metadataProvider: Logger.MetadataProvider? {
        get { base.metadataProvider }
        set { base.metadataProvider = newValue }
    }

    public func log(event: LogEvent) {
        var own = self.metadata
        if let provided = metadataProvider?.get() { own.merge(provided) { _, new in new } }
        if let metadata = event.metadata { own.merge(metadata) { _, new in new } }
        var handler = base
        // The handler's own and provided metadata are escaped here with the call's: the base sees none of its own.
        handler.metadata = [:]
        if handler.metadataProvider != nil { handler.metadataProvider = nil }
        handler.log(event: LogEvent(level: event.level, message: "\(LogText.escaped(event.message.description))",
                                    metadata: own.isEmpty ? nil : Self.escaped(own), source: event.source,
                                    file: event.file, function: event.function, line: event.line))
    }

    static func escaped(_ metadata: Logger.Metadata) -> Logger.Metadata {
        var out: Logger.Metadata = [:]
        for (key, value) in metadata { out[LogText.escaped(key)] = escaped(value) }
        return out
    }

    static func escaped(_ value: Logger.Metadata.Value) -> Logger.Metadata.Value {
        switch value {
        case .string(let text): .string(LogText.escaped(text))
        case .stringConvertible(let convertible): .string(LogText.escaped(convertible.description))
        case .array(let values): .array(values.map(escaped))
        case .dictionary(let values): .dictionary(escaped(values))
        }
    }
}
