/// An aligned plain-text table for people. Columns are sized to their widest cell; numbers
/// (columns marked right-aligned) line up on the right. Colour is added by the caller only
/// when writing to a terminal.
struct TextTable {
    enum Alignment { case left, right }

    var headers: [String]
    var alignments: [Alignment]
    private(set) var rows: [[String]] = []

    init(_ headers: [String], alignments: [Alignment]? = nil) {
        self.headers = headers
        self.alignments = alignments ?? Array(repeating: .left, count: headers.count)
    }

    mutating func append(_ cells: [String]) {
        precondition(cells.count == headers.count, "a row must have one cell per column")
        rows.append(cells)
    }

    func render() -> String {
        var widths = headers.map(\.count)
        for row in rows {
            for (column, cell) in row.enumerated() { widths[column] = max(widths[column], cell.count) }
        }
        func line(_ cells: [String]) -> String {
            cells.enumerated().map { column, cell in
                let padding = String(repeating: " ", count: widths[column] - cell.count)
                return alignments[column] == .right ? padding + cell : cell + padding
            }.joined(separator: "  ").trimmingTrailingSpaces()
        }
        var output = [line(headers), line(widths.map { String(repeating: "-", count: $0) })]
        output += rows.map(line)
        return output.joined(separator: "\n")
    }
}

extension String {
    func trimmingTrailingSpaces() -> String {
        var copy = self
        while copy.last == " " { copy.removeLast() }
        return copy
    }
}
