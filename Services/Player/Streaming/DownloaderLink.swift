import Logging
import Wire

/// What the player asks of the downloader over its socket (`downloader.sock`), each call on a
/// connection of its own with a short limit, so a downloader that is down or busy never holds
/// up playback:
/// - the network the device is on (`network.get`: its monitor, or the app's override): a stream
///   is asked at the cellular quality on a cellular link, at the Wi-Fi quality otherwise (also
///   when the downloader does not answer);
/// - the app's offline mode (`policy.set {"offlineMode"}`), so that the downloader stops its own
///   traffic to the origin too (TIDAL: offline mode is used by both engines).
struct DownloaderLink: Sendable {
    let socketPath: String
    let logger: Logger
    /// A local socket answers in well under this.
    static let answerLimit: Int64 = 2

    func isCellular() async -> Bool {
        let answer = try? await call("network.get", .object([:]))
        return answer?["type"]?.stringValue == "cellular"
    }

    /// Tells the downloader the app's offline mode; false when it could not be told (not running).
    @discardableResult
    func setOfflineMode(_ on: Bool) async -> Bool {
        do {
            _ = try await call("policy.set", ["offlineMode": .bool(on)])
            return true
        } catch {
            logger.warning("the downloader could not be told offlineMode=\(on): \(error)")
            return false
        }
    }

    private func call(_ method: String, _ params: JSONValue) async throws -> JSONValue {
        let client = try await RPCClient.connect(path: socketPath)
        do {
            let answer = try await client.call(method, params, timeout: .seconds(Self.answerLimit))
            await client.close()
            return answer
        } catch {
            await client.close()
            throw error
        }
    }
}
