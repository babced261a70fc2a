import CatalogModel
import Foundation
import SquareWire

/// Price over Square time as a step chart: in the terminal (one glyph per series) and as SVG.
/// Each series is one price scope of one object (base price, or one location's override).
enum PriceChart {
    struct Series {
        var name: String
        /// (Square time ns, amount in minor units or nil when the price is absent), oldest first.
        var points: [(Int64, Int64?)]
    }

    static func series(_ changes: [PriceChange]) -> [Series] {
        var byName: [String: Series] = [:]
        var order: [String] = []
        for change in changes where change.scope.kind != .pricingType {
            let name = "\(change.objectID) \(change.scope.kind == .basePrice ? "base" : change.scope.locationID?.rawValue ?? "")"
            if byName[name] == nil {
                byName[name] = Series(name: name, points: [])
                order.append(name)
            }
            byName[name]!.points.append((change.updatedAtNanos, change.afterMoney?.amount))
        }
        return order.map { byName[$0]! }
    }

    static let glyphs: [Character] = ["*", "o", "+", "x", "#", "@", "%", "="]

    static func terminal(_ changes: [PriceChange], width: Int, height: Int) -> String {
        let all = series(changes)
        let amounts = all.flatMap { $0.points.compactMap(\.1) }
        guard let low = amounts.min(), let high = amounts.max(), let start = all.flatMap({ $0.points.map(\.0) }).min()
        else { return "(no prices to chart)" }
        let end = max(all.flatMap { $0.points.map(\.0) }.max() ?? start, start + 1)
        let span = max(high - low, 1)
        var grid = Array(repeating: Array(repeating: Character(" "), count: width), count: height)
        for (index, line) in all.enumerated() {
            let glyph = glyphs[index % glyphs.count]
            for column in 0..<width {
                let t = start + Int64(Double(end - start) * Double(column) / Double(max(width - 1, 1)))
                guard let amount = line.points.last(where: { $0.0 <= t })?.1 else { continue }
                let row = height - 1 - Int(Double(amount - low) / Double(span) * Double(height - 1))
                grid[row][column] = glyph
            }
        }
        let labelWidth = max(money(high, changes).count, money(low, changes).count)
        var lines: [String] = []
        for (row, cells) in grid.enumerated() {
            let label = row == 0 ? money(high, changes) : row == height - 1 ? money(low, changes) : ""
            lines.append(String(repeating: " ", count: labelWidth - label.count) + label + " |" + String(cells))
        }
        lines.append(String(repeating: " ", count: labelWidth) + " +" + String(repeating: "-", count: width))
        let from = RFC3339.format(nanoseconds: start).prefix(10)
        let to = RFC3339.format(nanoseconds: end).prefix(10)
        lines.append(String(repeating: " ", count: labelWidth + 2) + from +
                     String(repeating: " ", count: max(1, width - from.count - to.count)) + to)
        for (index, line) in all.enumerated() { lines.append("  \(glyphs[index % glyphs.count]) \(line.name)") }
        return lines.joined(separator: "\n")
    }

    /// An axis label: the amount as money in the changes' currency (`$3.50`).
    static func money(_ minor: Int64, _ changes: [PriceChange]) -> String {
        let currency = changes.lazy.compactMap { $0.afterMoney?.currency ?? $0.beforeMoney?.currency }.first ?? ""
        return Money(amount: minor, currency: currency).description
    }

    static func svg(_ changes: [PriceChange], title: String) -> String {
        let all = series(changes)
        let width = 720.0, height = 320.0, margin = 48.0
        let amounts = all.flatMap { $0.points.compactMap(\.1) }
        let times = all.flatMap { $0.points.map(\.0) }
        guard let low = amounts.min(), let high = amounts.max(), let start = times.min(), let last = times.max() else {
            return #"<svg xmlns="http://www.w3.org/2000/svg" width="720" height="60"><text x="10" y="30">no prices</text></svg>"#
        }
        let end = Double(max(last, start + 1))
        let span = Double(max(high - low, 1))
        func x(_ t: Int64) -> Double { margin + (Double(t - start) / (end - Double(start))) * (width - 2 * margin) }
        func y(_ amount: Int64) -> Double { height - margin - Double(amount - low) / span * (height - 2 * margin) }
        let colours = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b"]
        var body = ""
        for (index, line) in all.enumerated() {
            var path = ""
            var previous: Int64?
            for (t, amount) in line.points {
                guard let amount else { previous = nil; continue }
                if let previous { path += " L\(x(t)),\(y(previous)) L\(x(t)),\(y(amount))" } else { path += " M\(x(t)),\(y(amount))" }
                previous = amount
            }
            if let previous { path += " L\(width - margin),\(y(previous))" }
            let colour = colours[index % colours.count]
            body += #"<path d="\#(path)" fill="none" stroke="\#(colour)" stroke-width="2"/>"#
            body += #"<text x="\#(margin)" y="\#(height - 8 - Double(all.count - 1 - index) * 14)" fill="\#(colour)" font-size="11">\#(escape(line.name))</text>"#
        }
        return """
        <svg xmlns="http://www.w3.org/2000/svg" width="\(Int(width))" height="\(Int(height) + 14 * all.count)" font-family="sans-serif">
        <text x="\(margin)" y="24" font-size="14">\(escape(title))</text>
        <line x1="\(margin)" y1="\(height - margin)" x2="\(width - margin)" y2="\(height - margin)" stroke="#888"/>
        <line x1="\(margin)" y1="\(margin)" x2="\(margin)" y2="\(height - margin)" stroke="#888"/>
        <text x="4" y="\(y(high) + 4)" font-size="11">\(escape(money(high, changes)))</text>
        <text x="4" y="\(y(low) + 4)" font-size="11">\(escape(money(low, changes)))</text>
        \(body)
        </svg>

        """
    }

    static func escape(_ text: String) -> String {
        text.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;")
    }
}
