extension Duration {
    /// Seconds, rounded to the millisecond: how status fields show a time.
    var roundedSeconds: Double { rounded(perSecond: 1) }

    /// Milliseconds, rounded to the microsecond.
    var roundedMilliseconds: Double { rounded(perSecond: 1000) }

    /// `components` once (it divides a 128-bit count), and no `pow`: status is answered often.
    private func rounded(perSecond units: Double) -> Double {
        let (seconds, attoseconds) = components
        return ((Double(seconds) + Double(attoseconds) / 1e18) * units * 1000).rounded() / 1000
    }
}
