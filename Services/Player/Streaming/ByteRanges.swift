/// Which byte ranges of a resource are on disk: sorted, non-overlapping, adjacent ranges merged.
/// A stream fetched out of order (after a seek) fills its gaps later; it is complete when one
/// range covers `0..<size`.
struct ByteRanges: Sendable, Equatable {
    private(set) var ranges: [Range<Int64>] = []

    mutating func insert(_ range: Range<Int64>) {
        guard !range.isEmpty else { return }
        var merged = range
        var kept: [Range<Int64>] = []
        kept.reserveCapacity(ranges.count + 1)
        for existing in ranges {
            if existing.upperBound < merged.lowerBound || existing.lowerBound > merged.upperBound {
                kept.append(existing)
            } else {
                merged = min(existing.lowerBound, merged.lowerBound)..<max(existing.upperBound, merged.upperBound)
            }
        }
        kept.append(merged)
        ranges = kept.sorted { $0.lowerBound < $1.lowerBound }
    }

    /// The end of the range holding `offset`, nil when that byte is not on disk.
    func end(containing offset: Int64) -> Int64? {
        ranges.first { $0.contains(offset) }?.upperBound
    }

    /// The first byte at or after `offset` (and before `limit`) that is not on disk.
    func firstGap(from offset: Int64, upTo limit: Int64?) -> Int64? {
        var candidate = offset
        for range in ranges where range.upperBound > candidate {
            if range.lowerBound > candidate { break }
            candidate = range.upperBound
        }
        if let limit, candidate >= limit { return nil }
        return candidate
    }

    /// Where the next range on disk after `offset` starts (the end of the gap at `offset`).
    func nextStart(after offset: Int64) -> Int64? {
        ranges.first { $0.lowerBound > offset }?.lowerBound
    }

    func covers(size: Int64) -> Bool {
        size == 0 || ranges.first.map { $0.lowerBound == 0 && $0.upperBound >= size } ?? false
    }

    var byteCount: Int64 { ranges.reduce(0) { $0 + Int64($1.count) } }
}
