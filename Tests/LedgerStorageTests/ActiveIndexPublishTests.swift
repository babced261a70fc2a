// The active segment's sparse index is published for readers at most once per
// `activeIndexPublishInterval` while appends go on, by the idle writer once the interval is over,
// and at close (docs/FORMAT.md, "Sparse index files"). Readers positioning with a stale index still
// find every record.

import Foundation
import LedgerStorage
import SystemPackage
import Testing

@Suite("Publishing the active segment's index")
struct ActiveIndexPublishTests {
    /// One call per record, so each call is one batch and the indexed batches are the same in every
    /// directory; a segment large enough to stay active; an entry about every five batches.
    static func options(publishInterval: Duration) -> LogWriterOptions {
        var options = StorageTestSupport.smallOptions(segmentBytes: 1 << 20)
        options.activeIndexPublishInterval = publishInterval
        return options
    }

    static let recordCount = 60

    static func appendOneByOne(_ writer: LogWriter) async throws {
        for index in 0..<recordCount { _ = try await writer.append(StorageTestSupport.records(index..<(index + 1))) }
    }

    /// The index of the first segment as a reader in another process finds it on disk.
    static func publishedIndex(_ directory: FilePath) -> SparseIndex? {
        let segments = directory.appending("segments").string
        guard let sequence = FileManager.default.contents(atPath: segments + "/00000000000000000000.sidx"),
              let time = FileManager.default.contents(atPath: segments + "/00000000000000000000.tidx") else { return nil }
        return SparseIndex.decode(sequenceIndex: Array(sequence), timeIndex: Array(time), segmentBase: 0)
    }

    /// The index a writer that publishes every gained entry leaves after the same appends.
    static func fullIndex() async throws -> SparseIndex {
        let directory = StorageTestSupport.temporaryDirectory("index-every-entry")
        defer { StorageTestSupport.removeDirectory(directory) }
        let writer = try LogWriter.open(directory: directory, options: options(publishInterval: .zero))
        try await appendOneByOne(writer)
        let published = try #require(publishedIndex(directory))
        try writer.close()
        #expect(published.entries.count >= 5, "the appends must gain several entries: \(published.entries)")
        return published
    }

    @Test("within the interval only the first entry is published; close publishes the rest; readers find every record meanwhile")
    func rateLimitedUntilClose() async throws {
        let full = try await Self.fullIndex()
        let directory = StorageTestSupport.temporaryDirectory("index-rate-limited")
        defer { StorageTestSupport.removeDirectory(directory) }
        let writer = try LogWriter.open(directory: directory, options: Self.options(publishInterval: .seconds(3600)))
        try await Self.appendOneByOne(writer)
        let stale = try #require(Self.publishedIndex(directory))
        #expect(stale.entries == Array(full.entries.prefix(1)))

        // A reader positioning past the published entries scans from the last one it has.
        let reader = LogReader(directory: directory)
        for start in [UInt64(0), 7, 31, UInt64(Self.recordCount - 1)] {
            let records = try reader.readAll(from: start)
            #expect(records.map(\.sequence) == Array(start..<UInt64(Self.recordCount)))
            #expect(records.first?.payload == StorageTestSupport.payload(Int(start)))
        }
        let byTime = try reader.records(fromLedgerTime: 45_000)
        var cursor = byTime
        #expect(try cursor.next()?.sequence == 45)

        try writer.close()
        #expect(Self.publishedIndex(directory) == full)
    }

    @Test("an idle writer publishes what the interval held back, without another append")
    func idleWriterPublishesOnceTheIntervalIsOver() async throws {
        let full = try await Self.fullIndex()
        let directory = StorageTestSupport.temporaryDirectory("index-idle")
        defer { StorageTestSupport.removeDirectory(directory) }
        let interval = Duration.milliseconds(1500)
        let writer = try LogWriter.open(directory: directory, options: Self.options(publishInterval: interval))
        let start = ContinuousClock.now
        try await Self.appendOneByOne(writer)
        let appendsTook = ContinuousClock.now - start
        let early = Self.publishedIndex(directory)
        if appendsTook < interval {
            // Checked only when the appends fit in the interval (they take milliseconds; a stalled
            // machine could stretch them past it, and then a publish was due).
            #expect(early?.entries == Array(full.entries.prefix(1)))
        }
        var published = early
        let deadline = ContinuousClock.now + .seconds(20)
        while published != full && ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(50))
            published = Self.publishedIndex(directory)
        }
        #expect(published == full, "the idle writer did not publish the held-back entries")
        #expect(ContinuousClock.now - start >= interval)
        try writer.close()
    }

    @Test("a publish that fails is retried with the next group, not by the idle writer in a loop")
    func failingPublishIsRetriedWithTheNextGroup() async throws {
        let full = try await Self.fullIndex()
        let directory = StorageTestSupport.temporaryDirectory("index-failing")
        defer { StorageTestSupport.removeDirectory(directory) }
        let fileSystem = IndexRefusingFileSystem()
        let writer = try LogWriter.open(directory: directory, options: Self.options(publishInterval: .zero), fileSystem: fileSystem)
        fileSystem.refusing = true
        // Appends go on while the index cannot be published; each group committed tries once.
        try await Self.appendOneByOne(writer)
        let attemptsAfterAppends = fileSystem.attempts
        #expect(attemptsAfterAppends == Self.recordCount, "one attempt per group")
        #expect(Self.publishedIndex(directory) == nil)
        try await Task.sleep(for: .milliseconds(500))
        // Idle with an interval of zero: a retry loop would have made thousands of attempts by now.
        #expect(fileSystem.attempts == attemptsAfterAppends, "attempts while idle: \(fileSystem.attempts - attemptsAfterAppends)")

        fileSystem.refusing = false
        var next = Self.recordCount
        while Self.publishedIndex(directory) == nil && next < Self.recordCount + 40 {
            _ = try await writer.append(StorageTestSupport.records(next..<(next + 1)))
            next += 1
        }
        let published = try #require(Self.publishedIndex(directory), "no entry gained after the refusals published the index")
        #expect(Array(published.entries.prefix(full.entries.count)) == full.entries)
        try writer.close()
    }
}

/// Refuses to create the active index's temporary files while `refusing`, counting the attempts.
final class IndexRefusingFileSystem: ForwardingFileSystem, @unchecked Sendable {
    let baseFileSystem: any FileSystem = PosixFileSystem()
    private let lock = NSLock()
    private var refusingValue = false
    private var attemptCount = 0

    var refusing: Bool {
        get { lock.withLock { refusingValue } }
        set { lock.withLock { refusingValue = newValue } }
    }
    var attempts: Int { lock.withLock { attemptCount } }

    func open(_ path: FilePath, mode: FileOpenMode) throws -> any LedgerFile {
        if path.string.hasSuffix("idx.tmp") {
            let refuse: Bool = lock.withLock {
                attemptCount += 1
                return refusingValue
            }
            if refuse { throw LedgerStorageError(.io(errno: EACCES), "refused by the test: \(path)") }
        }
        return try baseFileSystem.open(path, mode: mode)
    }
}
