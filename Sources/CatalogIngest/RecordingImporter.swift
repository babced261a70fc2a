import CatalogLedger
import CatalogModel
import Foundation
import SquareWire

/// What an import did.
public struct ImportReport: Sendable, Codable, Equatable {
    public var files = 0
    public var exchanges = 0
    public var eventsAppended = 0
    /// Events whose dedupe key the ledger already held (re-imports, re-observed versions).
    public var duplicates = 0
    public var firstSequence: UInt64?
    public var lastSequence: UInt64?

    public init() {}
}

/// Imports recordings (JSON Lines of `RecordedExchange`) into a ledger, in file order, each exchange
/// with the ledger time it was recorded at. Importing the same file twice appends nothing the second
/// time. All or nothing: every line is read, checked and mapped to events before the first append, so
/// a bad line (with its file and line number) stops the import with nothing written.
public struct RecordingImporter {
    let ledger: Ledger
    let merchant: MerchantID

    public init(ledger: Ledger, defaultMerchant: MerchantID = "UNKNOWN_MERCHANT") {
        self.ledger = ledger
        self.merchant = defaultMerchant
    }

    /// Reads, checks and maps every line of the files first (so a typo or a broken Square body is
    /// reported before anything is written), then appends. `progress(done, total)` is called after
    /// each exchange is appended.
    public func importFiles(_ paths: [String], progress: (Int, Int) -> Void = { _, _ in }) async throws -> ImportReport {
        var exchanges: [(RecordedExchange, String)] = []
        for path in paths {
            guard let data = FileManager.default.contents(atPath: path) else {
                throw IngestError.badRecording(file: path, line: 0, reason: "cannot read the file")
            }
            let text = try Self.text(of: data, file: path)
            for (index, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
                let trimmed = line.trimmingCharacters(in: .whitespaces)
                if trimmed.isEmpty || trimmed.hasPrefix("#") { continue }
                let exchange = try RecordedExchange.parse(line: trimmed, lineNumber: index + 1, file: path)
                guard RFC3339.nanoseconds(exchange.at) != nil else {
                    throw IngestError.badRecording(file: path, line: index + 1, reason: "\"at\" is not an RFC 3339 time")
                }
                exchanges.append((exchange, "\(path):\(index + 1)"))
            }
        }
        let planned = try plan(exchanges)
        var report = ImportReport()
        report.files = paths.count
        for (done, step) in planned.enumerated() {
            let outcomes = try await ledger.append(step.events, recordedAt: step.at)
            for outcome in outcomes {
                switch outcome {
                case .appended(let sequence, _):
                    report.eventsAppended += 1
                    report.firstSequence = report.firstSequence ?? sequence
                    report.lastSequence = sequence
                case .duplicate:
                    report.duplicates += 1
                }
            }
            report.exchanges += 1
            progress(done + 1, planned.count)
        }
        return report
    }

    /// The events of every exchange, mapped in order against the ledger's state with the events of the
    /// exchanges before it folded in (delete cascades need an item's variations, which may come from
    /// earlier lines of the same file). Folding is idempotent, so events the ledger turns out to hold
    /// already change nothing; the sequences given them here are provisional and never written.
    private func plan(_ exchanges: [(RecordedExchange, String)]) throws -> [(events: [PendingEvent], at: Int64)] {
        var mapper = ExchangeMapper(defaultMerchant: merchant)
        mapper.latestLocations = try ExchangeMapper.latestLocations(in: ledger.reader)
        var state = try ledger.reader.state(asOf: .latest).state
        var provisional = ledger.nextSequence
        var planned: [(events: [PendingEvent], at: Int64)] = []
        planned.reserveCapacity(exchanges.count)
        for (exchange, location) in exchanges {
            let at = RFC3339.nanoseconds(exchange.at)!
            let events = try mapper.events(for: exchange, state: state, where: location)
            for event in events {
                state.apply(LedgerEvent(sequence: provisional, recordedAt: at, content: event))
                provisional += 1
            }
            planned.append((events, at))
        }
        return planned
    }

    /// The file as text. Bodies in a recording are the bytes that crossed the wire, so bytes that are
    /// not UTF-8 are refused with their line rather than silently replaced.
    static func text(of data: Data, file: String) throws -> String {
        if let text = String(validating: data, as: UTF8.self) { return text }
        // A newline byte is never part of a multi-byte sequence, so each line is valid or not on its own.
        for (index, line) in data.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false).enumerated()
        where String(validating: line, as: UTF8.self) == nil {
            throw IngestError.badRecording(file: file, line: index + 1, reason: "not valid UTF-8")
        }
        return String(decoding: data, as: UTF8.self)
    }
}
