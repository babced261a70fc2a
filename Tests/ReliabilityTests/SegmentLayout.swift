// Where each item of a segment file starts, read from its intact bytes. The simulation uses it to
// know which location the verifier must name for a bit it flips: the start of the header, batch or
// footer holding that bit, because that is the unit the format checks (docs/FORMAT.md).

import LedgerStorage

struct SegmentLayout {
    enum Item: Equatable {
        case header
        case batch(sequences: ClosedRange<UInt64>)
        case footer
    }

    /// Items in file order with their byte ranges.
    var items: [(item: Item, range: Range<Int>)] = []

    /// Parses an intact segment. Returns nil when the bytes are not a well-formed segment, which the
    /// simulation treats as a failure of its own: sealed segments it flips bits in must be intact.
    init?(bytes: [UInt8]) {
        guard bytes.count >= LogFormat.segmentHeaderBytes else { return nil }
        items.append((.header, 0..<LogFormat.segmentHeaderBytes))
        var offset = LogFormat.segmentHeaderBytes
        while offset < bytes.count {
            let magic = Array(bytes[offset..<min(offset + 4, bytes.count)])
            if magic == LogFormat.footerMagic {
                guard offset + LogFormat.footerBytes <= bytes.count else { return nil }
                items.append((.footer, offset..<(offset + LogFormat.footerBytes)))
                offset += LogFormat.footerBytes
                continue
            }
            guard offset + LogFormat.batchHeaderBytes <= bytes.count,
                  let header = try? BatchHeader.parse(Array(bytes[offset..<(offset + LogFormat.batchHeaderBytes)])),
                  offset + header.totalBytes <= bytes.count
            else { return nil }
            items.append((.batch(sequences: header.sequences), offset..<(offset + header.totalBytes)))
            offset += header.totalBytes
        }
    }

    /// The item holding byte `offset`.
    func item(containing offset: Int) -> (item: Item, range: Range<Int>)? {
        items.first { $0.range.contains(offset) }
    }
}
