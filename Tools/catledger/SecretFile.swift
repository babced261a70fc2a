import Foundation

/// Secrets (the Square access token, webhook signature keys) read from a file: the file must not be
/// readable or writable by anyone but its owner (mode 0600 or 0400), else it is refused with what to
/// do. The secret is the file's content, trimmed; it is never printed.
enum SecretFile {
    static func read(_ path: String, what: String) throws -> String {
        let attributes: [FileAttributeKey: Any]
        do {
            attributes = try FileManager.default.attributesOfItem(atPath: path)
        } catch {
            throw CLIError(.usage, "cannot read the \(what) file \(path)", hint: "check the path and that this user owns the file")
        }
        let mode = (attributes[.posixPermissions] as? Int) ?? 0o777
        guard mode & 0o077 == 0 else {
            throw CLIError(.usage, "the \(what) file \(path) is readable by others (mode \(String(mode, radix: 8)))",
                           hint: "chmod 600 \(path) (only its owner may read a secret)")
        }
        guard let data = FileManager.default.contents(atPath: path) else {
            throw CLIError(.usage, "cannot read the \(what) file \(path)", hint: "check that this user owns the file")
        }
        let secret = String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        guard !secret.isEmpty else { throw CLIError(.usage, "the \(what) file \(path) is empty") }
        return secret
    }

    /// One secret per non-empty line (webhook signature keys: two during a rotation).
    static func lines(_ path: String, what: String) throws -> [String] {
        try read(path, what: what).split(whereSeparator: \.isNewline)
            .map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
    }
}
