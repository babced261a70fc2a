// Shared helpers for the LedgerStorage tests: temporary directories, seeded payloads, quick options.

import Foundation
import LedgerStorage
import LedgerStorageTesting
import SystemPackage
import TestSupport
import Testing

enum StorageTestSupport {
    /// A fresh directory under `Scratch`; removed by `removeDirectory`.
    static func temporaryDirectory(_ label: String) -> FilePath {
        FilePath(try! Scratch.directory("storage-\(label)"))
    }

    static func removeDirectory(_ path: FilePath) { Scratch.remove(path.string) }

    /// `SeededGenerator.seed(default:)`, printed so failures reproduce.
    static func seed(_ testName: String, default value: UInt64) -> UInt64 {
        let seed = SeededGenerator.seed(default: value)
        print("\(testName): seed \(seed) (set CATLEDGER_TEST_SEED to change)")
        return seed
    }

    /// Varied JSON-ish payloads, deterministic per seed and index.
    static func payload(_ index: Int, seed: UInt64 = 1) -> [UInt8] {
        var generator = SeededGenerator(seed: seed &+ UInt64(index) &* 1_000_003)
        let words = ["espresso", "latte", "bagel", "muffin", "scone", "tea", "mocha", "croissant", "juice", "granola"]
        let name = (0..<Int.random(in: 1...4, using: &generator)).map { _ in words.randomElement(using: &generator)! }.joined(separator: " ")
        let price = Int.random(in: 50...9_999, using: &generator)
        let text = #"{"index":\#(index),"name":"\#(name)","price_money":{"amount":\#(price),"currency":"USD"}}"#
        return Array(text.utf8)
    }

    static func records(_ range: Range<Int>, seed: UInt64 = 1, time: (Int) -> Int64 = { Int64($0) * 1_000 }) -> [LogRecord] {
        range.map { LogRecord(ledgerTime: time($0), payload: payload($0, seed: seed)) }
    }

    /// Small segments and no syncs so tests exercise rolling quickly.
    static func smallOptions(segmentBytes: Int = 4096, durability: DurabilityPolicy = .none) -> LogWriterOptions {
        var options = LogWriterOptions()
        options.segmentBytesMax = segmentBytes
        options.durability = durability
        options.indexIntervalBytes = 512
        options.batchRecordsMax = 16
        return options
    }

    static func segmentNames(_ directory: FilePath, fileSystem: any FileSystem) throws -> [String] {
        try fileSystem.contentsOfDirectory(directory.appending("segments")).filter { $0.hasSuffix(".seg") }.sorted()
    }
}
