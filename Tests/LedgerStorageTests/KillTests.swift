import Foundation
import LedgerStorage
import LedgerStorageTesting
import SystemPackage
import TestSupport
import Testing

@Suite("Crash by SIGKILL")
struct KillTests {
    @Test("SIGKILL at random moments, 200 times: every acknowledged record is readable and the log verifies")
    func killAtRandomMoments() async throws {
        let seed = StorageTestSupport.seed("killAtRandomMoments", default: 424_242)
        var generator = SeededGenerator(seed: seed)
        let started = Date()
        let rounds = 200
        var directory = StorageTestSupport.temporaryDirectory("kill")
        var directories = [directory]
        defer { directories.forEach(StorageTestSupport.removeDirectory) }
        var acknowledged: [UInt64: String] = [:]
        var totalAcknowledged = 0
        for round in 0..<rounds {
            if round % 25 == 0 && round > 0 {
                // A fresh directory now and then keeps each check's full read short.
                directory = StorageTestSupport.temporaryDirectory("kill")
                directories.append(directory)
                acknowledged.removeAll()
            }
            let child = try ChildProcess.launchKillChild(directory: directory, seed: seed &+ UInt64(round))
            try child.waitUntilReady()
            usleep(UInt32.random(in: 5_000...40_000, using: &generator))
            child.kill()
            for line in child.lines() where line.hasPrefix("ack ") {
                let fields = line.split(separator: " ", maxSplits: 2)
                acknowledged[UInt64(fields[1])!] = String(fields[2])
                totalAcknowledged += 1
            }

            let records = try LogReader(directory: directory).readAll()
            for (sequence, payload) in acknowledged {
                guard Int(sequence) < records.count else {
                    Issue.record("round \(round): acknowledged sequence \(sequence) missing (log has \(records.count))")
                    continue
                }
                #expect(String(decoding: records[Int(sequence)].payload, as: UTF8.self) == payload, "round \(round) sequence \(sequence)")
            }
            let writer = try LogWriter.open(directory: directory)
            let report = writer.recoveryReport
            try writer.close()
            #expect(report.nextSequence > (acknowledged.keys.max() ?? 0) || acknowledged.isEmpty, "round \(round)")
            let verification = LogVerifier.verify(directory: directory)
            #expect(verification.isClean, "round \(round): \(verification.problems)")
        }
        print("killAtRandomMoments: \(rounds) kills, \(totalAcknowledged) acknowledged records checked in \(Int(Date().timeIntervalSince(started))) s")
        #expect(totalAcknowledged > rounds, "the children acknowledged too little to test anything")
    }
}
