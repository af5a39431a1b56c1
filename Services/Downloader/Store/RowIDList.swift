extension Sequence where Element == Int64 {
    /// Row ids as the text of an SQL `IN (…)` list: integers only, so nothing from outside the
    /// catalog reaches the statement's text.
    var sqlList: String { map(String.init).joined(separator: ",") }
}
