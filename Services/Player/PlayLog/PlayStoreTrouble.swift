import GRDB
import StateDB

/// Why the catalog did not take a play-event write, by a stable name for the log and
/// `service.status`: `StorageFull` (its disk is full), `CatalogBusy` (locked by another writer
/// for longer than the busy timeout), `CatalogWriteFailed` (any other SQLite failure), or the
/// error's own name.
struct PlayStoreTrouble: Sendable, Equatable, CustomStringConvertible {
    var name: String
    var message: String

    init(_ error: any Error) {
        switch error {
        case let error as StateDBError:
            name = error.code.rawValue
            message = error.message
        case let error as DatabaseError where error.resultCode == .SQLITE_BUSY || error.resultCode == .SQLITE_LOCKED:
            name = "CatalogBusy"
            message = error.message ?? "\(error.resultCode)"
        case let error as DatabaseError:
            name = "CatalogWriteFailed"
            message = "\(error.resultCode): \(error.message ?? "")"
        default:
            name = String(describing: type(of: error))
            message = "\(error)"
        }
    }

    var isStorageFull: Bool { name == StateDBError.Code.storageFull.rawValue }
    var description: String { "\(name): \(message)" }
}
