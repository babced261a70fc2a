import LedgerStorage
import LedgerStorageTesting
import SystemPackage
import Testing

@Suite("Injected faults: nothing un-durable is acknowledged")
struct FaultInjectionTests {
    /// The shared I/O threads of the pooled runs (two, as on a small server).
    static let pool = LogIOPool(threads: 2, name: "tests.fault-injection.io")

    static func openLog(_ fileSystem: FaultInjectingFileSystem, segmentBytes: Int = 1 << 20, pooled: Bool = false) throws -> LogWriter {
        var options = StorageTestSupport.smallOptions(segmentBytes: segmentBytes, durability: .always)
        options.ioPool = pooled ? pool : nil
        return try LogWriter.open(directory: "/log", options: options, fileSystem: fileSystem)
    }

    @Test("ENOSPC fails the append; the writer recovers its file and the log reopens cleanly", arguments: [false, true])
    func noSpace(pooled: Bool) async throws {
        let fileSystem = FaultInjectingFileSystem()
        let writer = try Self.openLog(fileSystem, pooled: pooled)
        _ = try await writer.append(StorageTestSupport.records(0..<10))
        fileSystem.limitSpace(toMoreBytes: 40)
        let error = await #expect(throws: LedgerStorageError.self) { try await writer.append(StorageTestSupport.records(10..<20)) }
        #expect(error?.code == .noSpace)
        fileSystem.limitSpace(toMoreBytes: nil)
        // The partial bytes were cut again, so the same writer continues with the next sequence.
        let next = try await writer.append(StorageTestSupport.records(10..<12))
        #expect(next.first?.sequence == 10)
        try writer.close()
        fileSystem.crash(seed: 7)
        let reopened = try Self.openLog(fileSystem, pooled: pooled)
        #expect(reopened.recoveryReport.bytesDropped == 0)
        #expect(reopened.nextSequence == 12)
        try reopened.close()
        #expect(try LogReader(directory: "/log", fileSystem: fileSystem).readAll().count == 12)
        #expect(LogVerifier.verify(directory: "/log", fileSystem: fileSystem).isClean)
    }

    @Test("ENOSPC after a whole batch of the group was written: readers may have seen it, so its sequences are never reused")
    func noSpaceAfterACompleteBatch() async throws {
        var options = StorageTestSupport.smallOptions(segmentBytes: 1 << 20, durability: .always)
        options.batchRecordsMax = 2
        // The byte budget below counts every write; preallocation's zeros would spend it on another
        // thread (ENOSPC while preallocating has its own test in PreallocationTests).
        options.preallocationBytes = 0
        // The size of the batch records 10 and 11 make, from a log of their own.
        let probe = FaultInjectingFileSystem()
        let probeWriter = try LogWriter.open(directory: "/log", options: options, fileSystem: probe)
        let probeSegment = FilePath("/log/segments").appending(try StorageTestSupport.segmentNames("/log", fileSystem: probe)[0])
        let emptySize = try probe.open(probeSegment, mode: .readOnly).size()
        _ = try await probeWriter.append(StorageTestSupport.records(10..<12))
        let batchBytes = try probe.open(probeSegment, mode: .readOnly).size() - emptySize
        try probeWriter.close()

        let fileSystem = FaultInjectingFileSystem()
        let writer = try LogWriter.open(directory: "/log", options: options, fileSystem: fileSystem)
        _ = try await writer.append(StorageTestSupport.records(0..<10))
        // One call of four records is one group of two batches, written at once: the space runs
        // out inside the second.
        fileSystem.limitSpace(toMoreBytes: Int(batchBytes) + 20)
        let error = await #expect(throws: LedgerStorageError.self) { try await writer.append(StorageTestSupport.records(10..<14)) }
        #expect(error?.code == .noSpace)
        fileSystem.limitSpace(toMoreBytes: nil)
        // A reader sees the first batch of the failed group; cutting it and giving 10 and 11 to the
        // next append would show two different records under one sequence.
        let seen = try LogReader(directory: "/log", fileSystem: fileSystem).readAll()
        #expect(seen.map(\.sequence) == Array(0..<12))
        let refused = await #expect(throws: LedgerStorageError.self) { try await writer.append(StorageTestSupport.records(20..<21)) }
        #expect(refused?.code == .writerFailed)
        try? writer.close()

        let reopened = try LogWriter.open(directory: "/log", options: options, fileSystem: fileSystem)
        #expect(reopened.recoveryReport.bytesDropped == 20, "the torn start of the second batch is cut")
        #expect(reopened.nextSequence == 12)
        let next = try await reopened.append(StorageTestSupport.records(12..<13))
        #expect(next.map(\.sequence) == [12])
        try reopened.close()
        let records = try LogReader(directory: "/log", fileSystem: fileSystem).readAll()
        #expect(records.map(\.payload) == StorageTestSupport.records(0..<13).map(\.payload))
        #expect(LogVerifier.verify(directory: "/log", fileSystem: fileSystem).isClean)
    }

    @Test("an fsync failure fails the append and poisons the writer; after a crash only acknowledged records remain required", arguments: [false, true])
    func syncFailure(pooled: Bool) async throws {
        let fileSystem = FaultInjectingFileSystem()
        let writer = try Self.openLog(fileSystem, pooled: pooled)
        let acknowledged = try await writer.append(StorageTestSupport.records(0..<10))
        fileSystem.failNextSyncs(1)
        await #expect(throws: LedgerStorageError.self) { try await writer.append(StorageTestSupport.records(10..<20)) }
        let refused = await #expect(throws: LedgerStorageError.self) { try await writer.append(StorageTestSupport.records(10..<11)) }
        #expect(refused?.code == .writerFailed)
        try? writer.close()
        fileSystem.crash(seed: 11)
        let reopened = try Self.openLog(fileSystem, pooled: pooled)
        #expect(reopened.nextSequence >= UInt64(acknowledged.count))
        try reopened.close()
        let records = try LogReader(directory: "/log", fileSystem: fileSystem).readAll()
        #expect(Array(records.prefix(10)).map(\.payload) == StorageTestSupport.records(0..<10).map(\.payload))
        #expect(LogVerifier.verify(directory: "/log", fileSystem: fileSystem).isClean)
    }

    @Test("a short write fails the append without acknowledging anything", arguments: [false, true])
    func shortWrite(pooled: Bool) async throws {
        let fileSystem = FaultInjectingFileSystem()
        let writer = try Self.openLog(fileSystem, pooled: pooled)
        _ = try await writer.append(StorageTestSupport.records(0..<3))
        fileSystem.shortenNextWrites(1)
        await #expect(throws: LedgerStorageError.self) { try await writer.append(StorageTestSupport.records(3..<9)) }
        let after = try await writer.append(StorageTestSupport.records(3..<5))
        #expect(after.map(\.sequence) == [3, 4])
        try writer.close()
        #expect(try LogReader(directory: "/log", fileSystem: fileSystem).readAll().count == 5)
    }

    @Test("crashes at seeded moments keep every acknowledged record, across segment rolls", arguments: [false, true])
    func crashKeepsAcknowledged(pooled: Bool) async throws {
        let seed = StorageTestSupport.seed("crashKeepsAcknowledged", default: 99)
        var generator = SeededGenerator(seed: seed)
        let fileSystem = FaultInjectingFileSystem()
        var acknowledged: [UInt64: [UInt8]] = [:]
        var next = 0
        for round in 0..<40 {
            let writer = try Self.openLog(fileSystem, segmentBytes: 2048, pooled: pooled)
            #expect(writer.nextSequence >= UInt64(acknowledged.count), "round \(round)")
            next = Int(writer.nextSequence)
            for _ in 0..<Int.random(in: 1...6, using: &generator) {
                let count = Int.random(in: 1...8, using: &generator)
                let records = StorageTestSupport.records(next..<(next + count), seed: seed)
                for item in try await writer.append(records) { acknowledged[item.sequence] = StorageTestSupport.payload(Int(item.sequence), seed: seed) }
                next += count
            }
            // Unacknowledged bytes of a write in flight: a record written but never synced.
            fileSystem.failNextSyncs(1)
            _ = try? await writer.append(StorageTestSupport.records(next..<(next + 2), seed: seed))
            fileSystem.crash(seed: UInt64.random(in: 0...UInt64.max, using: &generator))
            try? writer.close()
        }
        let records = try LogReader(directory: "/log", fileSystem: fileSystem).readAll()
        for (sequence, payload) in acknowledged { #expect(records[Int(sequence)].payload == payload) }
        let final = try Self.openLog(fileSystem, segmentBytes: 2048, pooled: pooled)
        try final.close()
        #expect(LogVerifier.verify(directory: "/log", fileSystem: fileSystem).isClean)
    }

    /// RELIABILITY.md, finding 9: a roll whose manifest write failed left the segment's entry in the
    /// writer's manifest, and the next roll listed that segment twice, once with too few records.
    @Test("ENOSPC at every point of appends that roll: a failed roll poisons the writer, and reopened it lists each sealed segment once with its records")
    func noSpaceDuringRolls() async throws {
        var manifestFailures = 0
        for budget in stride(from: 0, through: 6_000, by: 61) {
            let fileSystem = FaultInjectingFileSystem()
            var writer = try Self.openLog(fileSystem, segmentBytes: 2048)
            fileSystem.limitSpace(toMoreBytes: budget)
            var acknowledged = 0
            var failure: LedgerStorageError?
            for index in 0..<40 {
                do {
                    _ = try await writer.append(StorageTestSupport.records(index..<(index + 1)))
                    acknowledged += 1
                } catch let error as LedgerStorageError {
                    failure = error
                    break
                }
            }
            fileSystem.limitSpace(toMoreBytes: nil)
            guard let failure else {
                try writer.close()
                continue
            }
            // A failed segment write is put right in place; a failed roll poisons the writer.
            if failure.location.file?.contains("MANIFEST") == true {
                manifestFailures += 1
                await #expect(throws: LedgerStorageError.self, "budget \(budget): the writer took an append after \(failure)") {
                    _ = try await writer.append(StorageTestSupport.records(100..<101))
                }
            }
            try? writer.close()

            writer = try Self.openLog(fileSystem, segmentBytes: 2048)
            let next = Int(writer.nextSequence)
            #expect(next >= acknowledged, "budget \(budget): acknowledged records lost")
            for index in next..<(next + 40) { _ = try await writer.append(StorageTestSupport.records(index..<(index + 1))) }
            let sealed = try await writer.sealedSegments()
            try writer.close()
            #expect(Set(sealed.map(\.segmentName)).count == sealed.count, "budget \(budget): a segment listed twice")
            // Each entry's records end where the next segment begins.
            let bases = sealed.map { SegmentFileName.parseSegment($0.segmentName)! }
            for (index, entry) in sealed.enumerated().dropLast() {
                #expect(entry.nextSequence(segmentBase: bases[index]) == bases[index + 1], "budget \(budget): \(entry.segmentName)")
            }
            let records = try LogReader(directory: "/log", fileSystem: fileSystem).readAll()
            #expect(records.map(\.sequence) == Array(0..<UInt64(next + 40)), "budget \(budget)")
            #expect(LogVerifier.verify(directory: "/log", fileSystem: fileSystem).isClean, "budget \(budget)")
        }
        #expect(manifestFailures > 0, "no budget made a roll's manifest write fail")
        print("ENOSPC during rolls: \(manifestFailures) failed manifest writes among the budgets")
    }

    @Test("policy interval acknowledges before the sync and syncs in the background within the interval", arguments: [false, true])
    func intervalPolicySyncsInBackground(pooled: Bool) async throws {
        let fileSystem = FaultInjectingFileSystem()
        var options = StorageTestSupport.smallOptions(durability: .interval(milliseconds: 20))
        options.ioPool = pooled ? Self.pool : nil
        let writer = try LogWriter.open(directory: "/log", options: options, fileSystem: fileSystem)
        _ = try await writer.append(StorageTestSupport.records(0..<5))
        _ = try await writer.append(StorageTestSupport.records(5..<10))
        // The background timer syncs without another append; a loaded machine may wake it late.
        let deadline = ContinuousClock.now + .seconds(20)
        func unsynced() -> Int { fileSystem.unsyncedByteCount(inFilesEndingWith: ".seg") }
        while unsynced() > 0, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(5)) }
        #expect(unsynced() == 0, "the background timer never synced the segment")
        // Everything was synced by the background timer, so a crash now keeps it all.
        fileSystem.crash(seed: 3)
        try? writer.close()
        let reopened = try Self.openLog(fileSystem)
        #expect(reopened.nextSequence == 10)
        #expect(reopened.recoveryReport.bytesDropped == 0)
        try reopened.close()
    }
}
