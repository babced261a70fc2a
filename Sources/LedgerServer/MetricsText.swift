// What a `metrics` token for one merchant may see of `/metrics`: the series labelled with its own
// merchant and the server-wide ones (no `merchant` label), never another merchant's. An admin token
// and the token-less `--metrics-listen` see every series.

enum MetricsText {
    /// The Prometheus text `text` without the sample lines whose `merchant` label names another merchant.
    /// Comment lines (`# HELP`, `# TYPE`) are kept: they name metric families, not merchants.
    static func scoped(_ text: [UInt8], to merchant: String) -> [UInt8] {
        let own = Array("merchant=\"\(merchant)\"".utf8)
        let label = Array("merchant=\"".utf8)
        var kept: [ArraySlice<UInt8>] = []
        for line in text.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false) {
            if line.first != UInt8(ascii: "#"), let labels = labelBlock(line) {
                let names = occurrences(of: label, in: labels)
                if !names.isEmpty && !names.allSatisfy({ labels[$0...].starts(with: own) }) { continue }
            }
            kept.append(line)
        }
        return Array(kept.joined(separator: [UInt8(ascii: "\n")]))
    }

    /// The `{...}` of a sample line, nil when it has none.
    private static func labelBlock(_ line: ArraySlice<UInt8>) -> ArraySlice<UInt8>? {
        guard let open = line.firstIndex(of: UInt8(ascii: "{")), let close = line.lastIndex(of: UInt8(ascii: "}")),
              open < close else { return nil }
        return line[open...close]
    }

    /// Where `label` starts as a label name (after `{` or `,`) in `labels`.
    private static func occurrences(of label: [UInt8], in labels: ArraySlice<UInt8>) -> [Int] {
        var found: [Int] = []
        var index = labels.startIndex
        while index < labels.endIndex {
            let previous = labels[index]
            if previous == UInt8(ascii: "{") || previous == UInt8(ascii: ",") {
                let start = index + 1
                if labels[start...].starts(with: label) { found.append(start) }
            }
            index += 1
        }
        return found
    }
}
