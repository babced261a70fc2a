// Shipping a served ledger to the segment archive (docs/SCALING.md, "Ranges"): one node in one process,
// its rounds run by the test. The active segment, once archived, is shipped again as the bytes
// appended after the archived prefix; the archive restores the log exactly as the node holds it.

import CatalogLedger
import Foundation
import LedgerCluster
@testable import LedgerServer
import LedgerStorage
import SquareWire
import TestSupport
import Testing

extension PostgresClusterTests {
    @Suite struct ArchiveShippingTests {
        static func shippedBytes(_ service: LedgerService) -> Int {
            let prefix = "catledger_archive_shipped_bytes_total "
            let text = String(decoding: service.renderMetrics(), as: UTF8.self)
            return text.split(separator: "\n").first { $0.hasPrefix(prefix) }.flatMap { Int($0.dropFirst(prefix.count)) } ?? 0
        }

        /// `count` webhook events of the merchant, appended to its ledger in batches.
        static func append(_ service: LedgerService, merchant: String, count: Int, prefix: String) async throws {
            try await service.withMerchant(merchant) { ledger in
                for start in stride(from: 0, to: count, by: 500) {
                    let events = try (start..<min(count, start + 500)).map { index in
                        let body = EpochFencingTests.delivery(merchant, "\(prefix)-\(index)-\(UUID().uuidString)")
                        return RequestAdmission.webhookEvent(try WebhookNotification(body: body), body: body, keptHeaders: [])
                    }
                    _ = try await ledger.ledger.append(events)
                }
            }
        }

        @Test("a big active segment shipped again after a small append sends only the appended bytes; the archive restores the log as the node holds it")
        func aGrownActiveSegmentShipsOnlyItsNewBytes() async throws {
            let url = try await PostgresServer.freshDatabase("ranges")
            let merchant = "MRANGES01"
            let scratch = Scratch.path("ranges")
            defer { Scratch.remove(scratch) }
            // A lease that outlasts the test's appends (its rounds are run by hand).
            let service = try await EpochFencingTests.service("node-a", root: "\(scratch)/a", url: url, merchant: merchant, lease: .seconds(60))
            let cluster = try #require(service.cluster)
            try await cluster.roundsUntilWriting(merchant, "the node owns the merchant", timeout: .seconds(20))
            let logDirectory = LedgerLayout(root: "\(scratch)/a/\(merchant)").logDirectory

            try await Self.append(service, merchant: merchant, count: 4000, prefix: "big")
            try await cluster.ship(merchant, force: false)
            let active = try #require(try LogShipping.segments(logDirectory: logDirectory).last)
            #expect(!active.sealed && active.byteCount > 200 << 10, "the active segment holds \(active.byteCount) bytes")
            let afterBig = Self.shippedBytes(service)
            #expect(afterBig >= active.byteCount - 4096, "the first shipment after the takeover's sent the appended bytes")

            try await Self.append(service, merchant: merchant, count: 1, prefix: "small")
            await cluster.round()
            try await cluster.ship(merchant, force: false)
            let grown = try #require(try LogShipping.segments(logDirectory: logDirectory).last)
            let sent = Self.shippedBytes(service) - afterBig
            #expect(grown.name == active.name && grown.byteCount > active.byteCount)
            #expect(sent == grown.byteCount - active.byteCount, "sent \(sent) bytes for \(grown.byteCount - active.byteCount) appended")
            #expect(sent < 2048)
            print("ranges: an active segment of \(grown.byteCount) bytes shipped again after one append sent \(sent) bytes "
                  + "(the shipment before it, \(afterBig) bytes)")

            // The archive restores every segment as the node holds it (ranges concatenated).
            let restored = try #require(try await SegmentArchive(database: cluster.database).restore(merchant: merchant))
            let local = try LogShipping.segments(logDirectory: logDirectory)
            #expect(restored.files.map(\.name) == local.map(\.name))
            for (file, segment) in zip(restored.files, local) {
                #expect(file.bytes == (try LogShipping.read(segment, logDirectory: logDirectory)), "\(file.name) restored as held")
            }
            #expect(restored.files.last?.rangeCount ?? 0 >= 2)
            try await service.close()
        }
    }
}
