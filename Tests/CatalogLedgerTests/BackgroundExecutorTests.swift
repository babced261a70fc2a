import CatalogLedger
import Foundation
import Testing

/// Work with the background executor as preference runs on its own thread, at a lower priority.
@Suite struct BackgroundExecutorTests {
    /// The calling thread's nice value, field 19 of /proc/thread-self/stat (after the command name).
    static func currentThreadNice() throws -> Int32 {
        let stat = try String(contentsOfFile: "/proc/thread-self/stat", encoding: .utf8)
        let fields = stat[stat.index(after: try #require(stat.lastIndex(of: ")")))...].split(separator: " ")
        return try #require(Int32(fields[16]))
    }

    @Test("jobs run on a thread whose nice value is raised by the increment")
    func lowerPriority() async throws {
        #if os(Linux)
        let executor = BackgroundExecutor(name: "test.background", niceIncrement: 5)
        let base = try Self.currentThreadNice()
        let nice = try await withTaskExecutorPreference(executor) { try Self.currentThreadNice() }
        #expect(nice == min(base + 5, 19))
        #expect(executor.appliedNice == nice)
        #endif
    }
}
