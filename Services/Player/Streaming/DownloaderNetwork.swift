import Wire

/// The network the device is on, as the downloader sees it (`network.get` on its socket: its
/// monitor, or the app's override): the player streams at the cellular quality on a cellular
/// link and at the Wi-Fi quality otherwise. With the downloader not running, Wi-Fi is assumed.
struct DownloaderNetwork: Sendable {
    let socketPath: String
    /// A local socket answers in well under this; past it the Wi-Fi quality is used.
    static let answerLimit: Int64 = 1

    func isCellular() async -> Bool {
        guard let client = try? await RPCClient.connect(path: socketPath) else { return false }
        let answer = try? await client.call("network.get", timeout: .seconds(Self.answerLimit))
        await client.close()
        return answer?["type"]?.stringValue == "cellular"
    }
}
