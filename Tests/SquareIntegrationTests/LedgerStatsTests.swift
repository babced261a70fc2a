import CatalogIngest
import CatalogLedger
import CatalogModel
import Foundation
import LedgerQueries
import LedgerStorage
import TestSupport
import Testing

/// `LedgerQueries.stats()` counts the log's bytes, not the zeros a writer preallocates ahead of its
/// appends (4 MiB at a time, with durability `always`): those are allocated bytes only.
@Suite("stats sizes")
struct LedgerStatsTests {
    @Test("while a writer keeps preallocated space, log bytes leave it out and allocated bytes hold it")
    func preallocatedZerosAreNotLog() async throws {
        let root = Scratch.path("stats-prealloc")
        defer { Scratch.remove(root) }
        let layout = LedgerLayout(root: root)
        var options = LedgerOptions()
        options.storage.durability = .always
        let ledger = try Ledger.open(layout: layout, options: options)
        _ = try await RecordingImporter(ledger: ledger).importFiles([LedgerQueriesNamesTests.samplePath])
        // The writer's background thread zero-fills ahead of the active segment; wait for it.
        let reader = LogReader(directory: layout.logDirectory)
        let deadline = ContinuousClock.now + .seconds(30)
        while try reader.preallocatedBytes() == 0, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(20)) }
        let preallocated = try reader.preallocatedBytes()
        #expect(preallocated > 0, "no preallocated space appeared")
        let stats = try LedgerQueries(reader: ledger.reader, historyIndex: false).stats()
        #expect(stats.logBytes < stats.allocatedBytes)
        #expect(stats.allocatedBytes - stats.logBytes == preallocated)
        // The log holds a few hundred KiB of events: far less than the megabytes of zeros.
        #expect(stats.logBytes < 1 << 20, "\(stats.logBytes) bytes")
        try await ledger.close()
        // Closed and read again, the same events are the same log bytes.
        let reopened = try LedgerQueries(reader: try LedgerReader(layout: layout), historyIndex: false).stats()
        #expect(reopened.logBytes == stats.logBytes)
        #expect(reopened.events == stats.events)
    }
}
