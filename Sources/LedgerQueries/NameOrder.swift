import CatalogModel
import Foundation

/// The catalog's name order: by name (none as ""), then id, both compared as UTF-8 bytes. It is the
/// order of the index the catalog now is read from (`ProjectionQueries.shownNow`, SQLite's binary
/// collation), so a past moment lists its items in the order the present does.
enum NameOrder {
    /// `elements` in name order.
    static func sorted<Element>(_ elements: [Element], name: (Element) -> String?, id: (Element) -> CatalogObjectID) -> [Element] {
        order(of: Array(elements.indices), name: { name(elements[$0]) }, id: { id(elements[$0]) }).map { elements[$0] }
    }

    /// `positions` in the name order of what `name` and `id` say of each (positions in a caller's
    /// array: only they move while sorting). The keys are laid out in one buffer and compared with
    /// `memcmp`: sorting 25,000 items by pairs of Strings (a copy and a Unicode comparison per step)
    /// was 70 % of the time of a page of the catalog at a past moment.
    static func order(of positions: [Int], name: (Int) -> String?, id: (Int) -> CatalogObjectID) -> [Int] {
        var bytes: [UInt8] = []
        var keys: [(name: Range<Int>, id: Range<Int>)] = []
        keys.reserveCapacity(positions.count)
        for position in positions {
            let start = bytes.count
            if let name = name(position) { bytes.append(contentsOf: name.utf8) }
            let middle = bytes.count
            bytes.append(contentsOf: id(position).rawValue.utf8)
            keys.append((start..<middle, middle..<bytes.count))
        }
        let order = bytes.withUnsafeBufferPointer { buffer in
            keys.indices.sorted { a, b in
                let byName = compare(buffer, keys[a].name, keys[b].name)
                return byName != 0 ? byName < 0 : compare(buffer, keys[a].id, keys[b].id) < 0
            }
        }
        return order.map { positions[$0] }
    }

    /// `a` against `b` as byte strings: negative, zero or positive.
    private static func compare(_ buffer: UnsafeBufferPointer<UInt8>, _ a: Range<Int>, _ b: Range<Int>) -> Int {
        let common = min(a.count, b.count)
        if common > 0, let base = buffer.baseAddress {
            let byBytes = memcmp(base + a.lowerBound, base + b.lowerBound, common)
            if byBytes != 0 { return Int(byBytes) }
        }
        return a.count - b.count
    }
}
