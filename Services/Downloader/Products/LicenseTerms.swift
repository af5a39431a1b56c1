import Wire

/// The terms a license is asked for with (Brightcove: purchase, or rental for a duration that
/// starts when the license is requested). `rentalSeconds`/`purchase` in `offline.add`,
/// `offline.preloadLicense` and `offline.renewLicense` (docs/protocol.md).
enum LicenseTerms: Sendable, Equatable {
    case purchase
    case rental(seconds: Int)

    /// Longest rental accepted from a client: ten years (a typo must not look like a purchase).
    static let maxRentalSeconds = 10 * 366 * 86400

    var kind: String {
        switch self {
        case .purchase: "purchase"
        case .rental: "rental"
        }
    }

    var rentalSeconds: Int? {
        if case .rental(let seconds) = self { return seconds }
        return nil
    }

    /// The terms named in a request: nil when it names none; -32602 naming the field when it
    /// names both or a rental that is not a whole number of seconds in range.
    static func from(rentalSeconds: Double?, purchase: Bool?) throws -> LicenseTerms? {
        switch (rentalSeconds, purchase) {
        case (nil, nil), (nil, false?):
            return nil
        case (nil, true?):
            return .purchase
        case (let seconds?, nil), (let seconds?, false?):
            guard seconds.rounded() == seconds, seconds >= 1, seconds <= Double(maxRentalSeconds) else {
                throw RPCError.invalidParams("params.rentalSeconds must be a whole number of seconds from 1 to \(maxRentalSeconds).")
            }
            return .rental(seconds: Int(seconds))
        case (_?, true?):
            throw RPCError.invalidParams("params.rentalSeconds and params.purchase exclude each other: a license is a rental or a purchase.")
        }
    }

    /// The terms a stored license was granted with, for a renewal that names none.
    init(kind: String, rentalSeconds: Int?) {
        if kind == "rental", let rentalSeconds { self = .rental(seconds: rentalSeconds) } else { self = .purchase }
    }
}
