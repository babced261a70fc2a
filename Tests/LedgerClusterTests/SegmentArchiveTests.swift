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

        @Test("the active segment as ranges: a shipment stores only the bytes after the archived prefix, a restore concatenates and checks every range")
        func rangesAreStoredOnceAndCheckedOnRestore() async throws {
            try await withDatabases("archive-ranges", count: 1) { databases in
                let database = databases[0]
                let archive = SegmentArchive(database: database)
                let node = try ClusterNode(nodeID: "node-a", address: "a", leaseDuration: .seconds(30), database: database)
                let lease = try #require(try await node.acquire("M1"))
                let name = "00000000000000000000.seg"
                let prefix = (0..<100_000).map { UInt8(truncatingIfNeeded: $0 &* 31) }
                let first = ArchiveFile(name: name, bytes: prefix, sealed: false)
                try await archive.ship(merchant: "M1", epoch: lease.epoch, nodeID: "node-a", files: [first], eventCount: 1, inboxDoneThrough: 0)
                // Two small appends: each ships only its own bytes.
                var whole = prefix
                for (index, tail) in [[UInt8](repeating: 1, count: 10), [UInt8](repeating: 2, count: 20)].enumerated() {
                    let prefixSHA256 = SegmentArchive.sha256(whole)
                    let start = Int64(whole.count)
                    whole += tail
                    let range = ArchiveFile.appended(name: name, prefixSHA256: prefixSHA256, start: start, bytes: tail,
                                                     sha256: SegmentArchive.sha256(whole), sealed: false)
                    #expect(range.sentByteCount == tail.count && range.byteCount == Int64(whole.count))
                    try await archive.ship(merchant: "M1", epoch: lease.epoch, nodeID: "node-a", files: [range], eventCount: Int64(2 + index),
                                           inboxDoneThrough: 0)
                }
                #expect(try await SQL.integers(database, "SELECT sum(length(bytes))::bigint FROM archive_blobs") == [100_030],
                        "the prefix once, then only the appended bytes")
                #expect(try await SQL.integers(database, "SELECT start_byte FROM archive_ranges ORDER BY start_byte") == [0, 100_000, 100_010])
                let restored = try #require(try await archive.restore(merchant: "M1"))
                #expect(restored.files.map(\.bytes) == [whole] && restored.files.map(\.rangeCount) == [3])

                // Unchanged: nothing sent, the ranges kept. A range that does not follow the archived prefix is refused.
                let kept = ArchiveFile.unchanged(name: name, sha256: SegmentArchive.sha256(whole), byteCount: Int64(whole.count), sealed: false)
                try await archive.ship(merchant: "M1", epoch: lease.epoch, nodeID: "node-a", files: [kept], eventCount: 4, inboxDoneThrough: 0)
                #expect(try await archive.restore(merchant: "M1")?.files.map(\.bytes) == [whole])
                let astray = ArchiveFile.appended(name: name, prefixSHA256: SegmentArchive.sha256(prefix), start: Int64(prefix.count),
                                                  bytes: [9], sha256: SegmentArchive.sha256(prefix + [9]), sealed: false)
                let refused = await clusterError {
                    try await archive.ship(merchant: "M1", epoch: lease.epoch, nodeID: "node-a", files: [astray], eventCount: 5, inboxDoneThrough: 0)
                }
                #expect(refused == .invalidArgument("segment \(name) is not in the archive as the shipment names it"))
                #expect(try await archive.latest(merchant: "M1")?.eventCount == 4, "nothing of the refused shipment written")

                // Sealed and shipped whole: the ranges and the bytes only they named are gone.
                let sealed = ArchiveFile(name: name, bytes: whole + [0xFF], sealed: true)
                try await archive.ship(merchant: "M1", epoch: lease.epoch, nodeID: "node-a", files: [sealed], eventCount: 6, inboxDoneThrough: 0)
                #expect(try await SQL.integers(database, "SELECT count(*) FROM archive_ranges") == [0])
                #expect(try await SQL.integers(database, "SELECT sum(length(bytes))::bigint FROM archive_blobs") == [100_031])
                #expect(try await archive.restore(merchant: "M1")?.files.map(\.bytes) == [whole + [0xFF]])

                // Damage in a range is found on restore, naming the file and the range.
                let active = ArchiveFile(name: "00000000000000000100.seg", bytes: [5, 5, 5], sealed: false)
                try await archive.ship(merchant: "M1", epoch: lease.epoch, nodeID: "node-a",
                                       files: [.unchanged(name: name, sha256: sealed.sha256, byteCount: sealed.byteCount, sealed: true), active],
                                       eventCount: 7, inboxDoneThrough: 0)
                try await archive.ship(merchant: "M1", epoch: lease.epoch, nodeID: "node-a",
                                       files: [.unchanged(name: name, sha256: sealed.sha256, byteCount: sealed.byteCount, sealed: true),
                                               .appended(name: active.name, prefixSHA256: active.sha256, start: 3, bytes: [6, 6, 7, 7],
                                                         sha256: SegmentArchive.sha256([5, 5, 5, 6, 6, 7, 7]), sealed: false)],
                                       eventCount: 8, inboxDoneThrough: 0)
                #expect(try await archive.restore(merchant: "M1")?.files.map(\.bytes) == [whole + [0xFF], [5, 5, 5, 6, 6, 7, 7]])
                try await SQL.execute(database, "UPDATE archive_blobs SET bytes = '\\x06060708' WHERE bytes = '\\x06060707'")
                let damaged = await clusterError { _ = try await archive.restore(merchant: "M1") }
                #expect(damaged == .archiveDamaged("merchant \"M1\": segment 00000000000000000100.seg range at byte 3 does not match its SHA-256"))
                try await SQL.execute(database, "DELETE FROM archive_ranges WHERE start_byte = 3")
                let lost = await clusterError { _ = try await archive.restore(merchant: "M1") }
                #expect(lost == .archiveDamaged("merchant \"M1\": segment 00000000000000000100.seg has 3 of its 7 bytes (a range is missing)"))
            }
        }

        @Test("a shipment written under schema version 2 (whole files only) restores after the migration to ranges")
        func aShipmentOfAnOlderBuildRestores() async throws {
            let url = try await PostgresServer.freshDatabase("archive-v2")
            // The database as a build of schema version 2 left it, with one shipment.
            var options = ClusterDatabase.Options()
            options.maximumConnections = 2
            let setup = try await ClusterDatabase.connect(url: url, options: options, logger: quietLogger)
            try await SQL.execute(setup, "DROP TABLE archive_ranges")
            try await SQL.execute(setup, "ALTER TABLE archive_files DROP COLUMN ranged")
            try await SQL.execute(setup, "DROP INDEX archive_files_sha256")
            try await SQL.execute(setup, """
                ALTER TABLE archive_files ADD CONSTRAINT archive_files_sha256_fkey FOREIGN KEY (sha256) REFERENCES archive_blobs (sha256)
                """)
            // Schema version 4's shared read model came later still.
            try await SQL.execute(setup, """
                DROP TABLE read_model_state, read_categories, read_catalog_items, read_item_variations, read_price_history,
                    read_conflicts CASCADE
                """)
            // And schema version 5's inbox purge index.
            try await SQL.execute(setup, "DROP INDEX webhook_inbox_done")
            try await SQL.execute(setup, "DELETE FROM cluster_schema_migrations WHERE version > 2")
            let bytes: [UInt8] = [1, 2, 3, 4, 5]
            let hex = bytes.map { String(format: "%02x", $0) }.joined(), hash = SegmentArchive.sha256(bytes).map { String(format: "%02x", $0) }.joined()
            try await SQL.execute(setup, "INSERT INTO archive_blobs VALUES ('\\x\(hash)', '\\x\(hex)')")
            try await SQL.execute(setup, "INSERT INTO archive_files VALUES ('M1', '00000000000000000000.seg', '\\x\(hash)', 5, false)")
            try await SQL.execute(setup, "INSERT INTO archive_shipments VALUES ('M1', 1, 'node-old', clock_timestamp(), 1, 0)")
            await setup.close()

            let database = try await ClusterDatabase.connect(url: url, options: options, logger: quietLogger)
            #expect(try await database.schemaVersions() == [1, 2, 3, 4, 5])
            let restored = try #require(try await SegmentArchive(database: database).restore(merchant: "M1"))
            #expect(restored.nodeID == "node-old" && restored.files.map(\.bytes) == [bytes] && restored.files.map(\.rangeCount) == [0])
            await database.close()
        }
    }
}
