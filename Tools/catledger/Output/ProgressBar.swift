import Foundation

/// A progress bar with rate and ETA for long commands (import, rebuild, compact, replay, sync).
/// It draws only when standard error is a terminal and `--json` is off; otherwise it stays quiet,
/// so scripts and CI logs are not filled with carriage returns. Not thread-safe: one owner.
final class ProgressBar {
    private let label: String
    private let total: Int?
    private let enabled: Bool
    private let started = Date()
    private var lastDraw = Date.distantPast
    private(set) var done = 0

    init(_ label: String, total: Int?, enabled: Bool = Terminal.standardErrorIsTerminal) {
        self.label = label
        self.total = total
        self.enabled = enabled
    }

    func advance(by count: Int = 1) {
        done += count
        let now = Date()
        guard enabled, now.timeIntervalSince(lastDraw) >= 0.1 else { return }
        lastDraw = now
        draw(now: now)
    }

    func finish() {
        guard enabled else { return }
        draw(now: Date())
        FileHandle.standardError.write(Data("\n".utf8))
    }

    private func draw(now: Date) {
        let elapsed = max(now.timeIntervalSince(started), 0.001)
        let rate = Double(done) / elapsed
        var text = "\r\(label) "
        if let total, total > 0 {
            let fraction = min(Double(done) / Double(total), 1)
            let filled = Int(fraction * 30)
            text += "[" + String(repeating: "#", count: filled) + String(repeating: ".", count: 30 - filled) + "] "
            text += "\(done)/\(total) \(Int(fraction * 100))% "
            if rate > 0, done < total {
                text += "ETA \(Self.duration(Double(total - done) / rate)) "
            }
        } else {
            text += "\(done) "
        }
        text += String(format: "%.0f/s", rate)
        FileHandle.standardError.write(Data(text.utf8))
    }

    static func duration(_ seconds: Double) -> String {
        if seconds < 60 { return String(format: "%.0fs", seconds) }
        if seconds < 3_600 { return "\(Int(seconds) / 60)m\(Int(seconds) % 60)s" }
        return "\(Int(seconds) / 3_600)h\(Int(seconds) % 3_600 / 60)m"
    }
}

enum Terminal {
    static var standardOutputIsTerminal: Bool { isatty(STDOUT_FILENO) == 1 }
    static var standardErrorIsTerminal: Bool { isatty(STDERR_FILENO) == 1 }

    /// ANSI colour, only on a terminal and never when NO_COLOR is set.
    static func colour(_ text: String, _ code: String) -> String {
        guard standardOutputIsTerminal, ProcessInfo.processInfo.environment["NO_COLOR"] == nil else { return text }
        return "\u{1B}[\(code)m\(text)\u{1B}[0m"
    }
}

/// A progress bar that callbacks on other tasks may advance; the lock serializes drawing.
final class SharedProgressBar: @unchecked Sendable {
    private let lock = NSLock()
    private let bar: ProgressBar

    init(_ bar: ProgressBar) { self.bar = bar }

    func advance(by count: Int = 1) { lock.withLock { bar.advance(by: count) } }
    func finish() { lock.withLock { bar.finish() } }
}
