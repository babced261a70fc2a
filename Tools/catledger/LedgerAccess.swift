import CatalogLedger
import CatalogModel
import CatalogProjections
import Foundation
import LedgerQueries
import LedgerStorage
import SystemPackage

/// Opens the ledger named by the global options, turning "nothing there" and "locked" into the
/// CLI's errors with a hint about what to do.
struct LedgerAccess {
    let options: GlobalOptions

    var layout: LedgerLayout { LedgerLayout(root: options.dataDirectory) }

    func reader() throws -> LedgerReader {
        do {
            return try LedgerReader(layout: layout)
        } catch LedgerError.noLedger {
            throw CLIError(.noLedger, "no ledger at \(options.dataDirectory)",
                           hint: "create one with `catledger init --data-dir \(options.dataDirectory)` or " +
                               "`catledger import FILE --data-dir \(options.dataDirectory)`, or point --data-dir at an existing ledger")
        }
    }

    /// Opens the ledger for writing, creating it when needed: for the commands that create a ledger
    /// or bring a first history in (init, import, serve, demo).
    func writer(options ledgerOptions: LedgerOptions = LedgerOptions()) throws -> Ledger {
        try Ledger.open(layout: layout, options: ledgerOptions, logger: try options.logger("catledger"))
    }

    /// Opens an existing ledger for writing, for maintenance (compact, repair) and for sync and edit:
    /// a mistyped --data-dir is "no ledger" (exit 4), never a new empty ledger.
    func existingWriter(options ledgerOptions: LedgerOptions = LedgerOptions()) throws -> Ledger {
        _ = try reader()
        return try writer(options: ledgerOptions)
    }

    /// Takes the writer lock of an existing ledger without opening it for writing, for maintenance
    /// that replaces files a running writer uses (rebuild). Fails like a second writer (lock_held,
    /// exit 6) while `catledger serve` or another writer holds the ledger.
    func writerLock() throws -> any LedgerFileLock {
        _ = try reader()
        return try LogWriterLock.acquire(directory: layout.logDirectory)
    }

    /// Says on standard error (so JSON on standard output stays as it is) when the ledger failed its
    /// last verification: answers read from snapshots or projections do not show damage by themselves.
    func warnIfLastVerificationFailed() {
        guard let record = VerificationRecord.load(layout: layout), !record.ok else { return }
        FileHandle.standardError.write(Data((
            "catledger: warning: \(record.summary)\n"
                + "  hint: answers may miss what the damage holds; `catledger verify` lists every problem, "
                + "`catledger repair` cuts the log before the damage\n").utf8))
    }
}

extension CLIError {
    /// Maps library errors to the CLI's kinds and exit codes.
    static func from(_ error: any Error) -> CLIError {
        switch error {
        case let error as CLIError:
            return error
        case let error as LedgerStorageError:
            switch error.code {
            case .lockHeld(let holder):
                return CLIError(.lockHeld, "the ledger is locked by another writer (\(holder))",
                                hint: "stop that process (e.g. `catledger serve`) or run read-only commands instead")
            case .corruptBatch, .brokenHashChain, .corruptSegmentHeader, .corruptFooter, .sequenceGap, .timeOrder,
                 .manifestMismatch, .tornTail, .indexMismatch:
                return CLIError(.corruptData, "the log is damaged: \(error)",
                                hint: "run `catledger verify` for every problem and its location; "
                                    + "`catledger repair` cuts the log before the first damage")
            default:
                return CLIError(.failure, "\(error)")
            }
        case let error as LedgerError:
            switch error {
            case .noLedger(let path):
                return CLIError(.noLedger, "no ledger at \(path)", hint: "create one with `catledger init` or `catledger import`")
            case .undecodableEvent, .corruptSnapshot:
                return CLIError(.corruptData, error.description, hint: "run `catledger verify`")
            case .noSuchSequence:
                return CLIError(.notFound, error.description)
            case .compactionInProgress:
                return CLIError(.lockHeld, error.description, hint: "wait for the running compaction to finish")
            }
        case let error as TimeExpressionError:
            return CLIError(.usage, error.description)
        case let error as FilterValueError:
            // An unknown or ambiguous filter value is not an empty answer (exit 3, as an unknown id).
            return CLIError(.notFound, error.message, hint: error.hint)
        case let error as ProjectionFileError:
            return CLIError(error)
        case let error as ProjectionError:
            // A ledger that cannot be read is reported as what stopped the read (damage: exit 5).
            if error.code == .ledger, let cause = error.cause {
                var mapped = from(cause)
                mapped.message += " (while projecting \(error.location))"
                return mapped
            }
            return CLIError(.failure, error.description)
        default:
            return CLIError(.failure, "\(error)")
        }
    }
}

/// Writes a value as JSON (sorted keys, one document) to standard output.
func printJSON<T: Encodable>(_ value: T) throws {
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.sortedKeys, .prettyPrinted, .withoutEscapingSlashes]
    FileHandle.standardOutput.write(try encoder.encode(value) + Data("\n".utf8))
}

/// Formats ledger nanoseconds for people, in the chosen zone.
func formatTime(_ nanoseconds: Int64, in zone: TimeZone) -> String { TimeDisplay(zone: zone).ledger(nanoseconds) }
