import Foundation
import LedgerCluster
import Testing
import TestSupport

extension PostgresClusterTests {
    @Suite struct SegmentArchiveTests {
        @Test("a shipment replaces the merchant's files, marks the inbox done with it, stores a sealed segment once and drops bytes no file names")
        func shipRestoreAndMarkDone() async throws {
            try await withDatabases("archive", count: 1) { databases in
                let database = databases[0]
                let archive = SegmentArchive(database: database), inbox = ClusterInbox(database: database)
                let node = try ClusterNode(nodeID: "node-a", address: "a", leaseDuration: .seconds(30), database: database)
                let lease = try #require(try await node.acquire("M1"))
                #expect(try await archive.latest(merchant: "M1") == nil)
                let first = try await inbox.accept(merchant: "M1", eventID: "e1", body: [1], headers: Array("h".utf8))
                _ = try await inbox.accept(merchant: "M1", eventID: "e2", body: [2])
                #expect(try await inbox.pending(merchant: "M1").map(\.headers) == [Array("h".utf8), []], "headers kept")

                let sealed = ArchiveFile(name: "00000000000000000000.seg", bytes: Array(repeating: 7, count: 1000), sealed: true)
                try await archive.ship(merchant: "M1", epoch: lease.epoch, nodeID: "node-a",
                                       files: [sealed, ArchiveFile(name: "00000000000000000010.seg", bytes: [1, 2, 3], sealed: false)],
                                       eventCount: 12, inboxDoneThrough: first.id)
                #expect(try await inbox.pending(merchant: "M1").map(\.eventID) == ["e2"], "done with the shipment holding it")
                #expect(try await SQL.integers(database, "SELECT done_epoch FROM webhook_inbox WHERE event_id = 'e1'") == [lease.epoch])

                // The active segment grew; the sealed one goes by its hash only.
                let archivedSealed = ArchiveFile(name: sealed.name, archivedSHA256: sealed.sha256, byteCount: 1000, sealed: true)
                try await archive.ship(merchant: "M1", epoch: lease.epoch, nodeID: "node-a",
                                       files: [archivedSealed, ArchiveFile(name: "00000000000000000010.seg", bytes: [1, 2, 3, 4], sealed: false)],
                                       eventCount: 13, inboxDoneThrough: first.id + 1)
                #expect(try await inbox.pending(merchant: "M1").isEmpty)
                #expect(try await SQL.integers(database, "SELECT count(*) FROM archive_blobs") == [2], "the earlier active prefix is gone")
                let restored = try #require(try await archive.restore(merchant: "M1"))
                #expect(restored.epoch == lease.epoch && restored.nodeID == "node-a" && restored.eventCount == 13)
                #expect(restored.files.map(\.bytes) == [Array(repeating: 7, count: 1000), [1, 2, 3, 4]])
                #expect(restored.files.map(\.sealed) == [true, false])

                // A file whose bytes the archive does not hold is refused (nothing shipped).
                let unknown = ArchiveFile(name: "00000000000000000020.seg", archivedSHA256: Array(repeating: 9, count: 32), byteCount: 1, sealed: true)
                #expect(await clusterError {
                    try await archive.ship(merchant: "M1", epoch: lease.epoch, nodeID: "node-a", files: [unknown], eventCount: 1, inboxDoneThrough: 0)
                } != nil)
                #expect(try await archive.latest(merchant: "M1")?.eventCount == 13)

                // Damaged bytes are found on read.
                try await SQL.execute(database, "UPDATE archive_blobs SET bytes = '\\x00' WHERE length(bytes) = 4")
                let damaged = await clusterError { _ = try await archive.restore(merchant: "M1") }
                #expect(damaged == .archiveDamaged("merchant \"M1\": segment 00000000000000000010.seg does not match its SHA-256"))
            }
        }

        @Test("a shipment under an epoch that is no longer current is refused and changes nothing")
        func aStaleEpochShipsNothing() async throws {
            try await withDatabases("archive-fence", count: 2) { databases in
                let a = try ClusterNode(nodeID: "node-a", address: "a", leaseDuration: .seconds(30), database: databases[0])
                let b = try ClusterNode(nodeID: "node-b", address: "b", leaseDuration: .seconds(30), database: databases[1])
                let leaseA = try #require(try await a.acquire("M1"))
                let archiveA = SegmentArchive(database: databases[0])
                let done = try await ClusterInbox(database: databases[0]).accept(merchant: "M1", eventID: "e1", body: [1])
                try await archiveA.ship(merchant: "M1", epoch: leaseA.epoch, nodeID: "node-a",
                                        files: [ArchiveFile(name: "00000000000000000000.seg", bytes: [1], sealed: false)],
                                        eventCount: 1, inboxDoneThrough: 0)
                try await a.release(leaseA)
                let leaseB = try #require(try await b.acquire("M1"))
                #expect(leaseB.epoch == leaseA.epoch + 1)
                let refusal = await clusterError {
                    try await archiveA.ship(merchant: "M1", epoch: leaseA.epoch, nodeID: "node-a",
                                            files: [ArchiveFile(name: "00000000000000000000.seg", bytes: [1, 2], sealed: false)],
                                            eventCount: 2, inboxDoneThrough: done.id)
                }
                #expect(refusal?.fenceRefusal?.currentEpoch == leaseB.epoch)
                let latest = try #require(try await SegmentArchive(database: databases[1]).restore(merchant: "M1"))
                #expect(latest.epoch == leaseA.epoch && latest.files.map(\.bytes) == [[1]])
                #expect(try await ClusterInbox(database: databases[1]).pending(merchant: "M1").count == 1, "nothing marked done")
            }
        }
    }
}
