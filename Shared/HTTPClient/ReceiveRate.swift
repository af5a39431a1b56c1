import NIOConcurrencyHelpers

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// A download rate in bytes per second that every download given it shares: together they
/// receive no faster than `bytesPerSecond` (nil: no limit), however many run at once.
///
/// Two parts work together. Each transfer asks libcurl to pace its own reads
/// (`CURLOPT_MAX_RECV_SPEED_LARGE`) at the whole rate, set when it starts and raised while it
/// runs when the rate goes up, so a transfer alone is paced by curl at the socket. The share
/// across parallel transfers is a token bucket: after each write a transfer takes its bytes
/// from the bucket and, when the bucket is in debt, waits on its own transfer thread until the
/// rate has paid the debt, so the total holds and a change of rate applies within one write.
///
/// Why not divide the rate among the transfers with curl's option alone: curl averages each
/// handle's speed over a window that only starts again while the handle is held at its limit,
/// so lowering a running handle's limit (which every transfer that starts beside it would need)
/// can make it wait for as long as it ran faster before, and a limit that comes while a
/// transfer runs unlimited would stop it for minutes. Raising a limit is always safe.
public final class ReceiveRate: Sendable {
    private struct State {
        var bytesPerSecond: Int64?
        /// Bytes that may still be taken at once; negative: a debt being paid at the rate.
        var balance: Double = 0
        var refilledAt: UInt64 = ReceiveRate.clock()
    }

    private let state: NIOLockedValueBox<State>

    public init(bytesPerSecond: Int64? = nil) {
        state = NIOLockedValueBox(State(bytesPerSecond: Self.valid(bytesPerSecond)))
    }

    /// The shared limit; nil (or 0) receives as fast as the link allows. A change applies to
    /// transfers already running.
    public var bytesPerSecond: Int64? {
        get { state.withLockedValue { $0.bytesPerSecond } }
        set {
            let rate = Self.valid(newValue)
            state.withLockedValue { s in
                guard s.bytesPerSecond != rate else { return }
                s.bytesPerSecond = rate
                // A debt run up at another rate is not carried over; a new rate starts even.
                s.balance = 0
                s.refilledAt = Self.clock()
            }
        }
    }

    /// The most one transfer may take at once beyond the rate: a quarter of a second of it, at
    /// least 16 KiB (curl's reads are that large when the rate is set, `bufferBytes`).
    static func burst(_ rate: Int64) -> Double { max(Double(rate) / 4, Double(16 << 10)) }

    /// curl's receive buffer for a transfer that starts under `rate`: an eighth of a second of
    /// it (16 KiB…`configured`), so that one read never brings much more than the rate allows.
    static func bufferBytes(rate: Int64?, configured: Int) -> Int {
        guard let rate else { return configured }
        return min(configured, max(16 << 10, Int(rate / 8)))
    }

    /// Takes `count` bytes received and waits (on the calling transfer thread, in slices of at
    /// most 100 ms) until the bucket is out of debt, the limit is lifted or `cancelled` says so.
    func take(_ count: Int, cancelled: () -> Bool) {
        var wait = state.withLockedValue { s -> Double in
            guard let rate = s.bytesPerSecond else { return 0 }
            Self.refill(&s, rate: rate)
            s.balance -= Double(count)
            return s.balance < 0 ? -s.balance / Double(rate) : 0
        }
        while wait > 0, !cancelled() {
            usleep(useconds_t(min(wait, 0.1) * 1e6))
            wait = state.withLockedValue { s -> Double in
                guard let rate = s.bytesPerSecond else { return 0 }
                Self.refill(&s, rate: rate)
                return s.balance < 0 ? -s.balance / Double(rate) : 0
            }
        }
    }

    private static func refill(_ s: inout State, rate: Int64) {
        let now = clock()
        let seconds = Double(now &- s.refilledAt) / 1e9
        s.refilledAt = now
        s.balance = min(s.balance + seconds * Double(rate), burst(rate))
    }

    private static func valid(_ rate: Int64?) -> Int64? {
        guard let rate, rate > 0 else { return nil }
        return rate
    }

    private static func clock() -> UInt64 {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return UInt64(ts.tv_sec) * 1_000_000_000 + UInt64(ts.tv_nsec)
    }
}
