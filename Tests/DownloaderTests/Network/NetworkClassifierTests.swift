import Foundation
import Logging
import Wire
import XCTest

@testable import downloader

/// The network monitor's rules without the hardware: sysfs facts → kind, /proc route tables →
/// default interface, NetworkManager's answer → kind, and the fail-over when it is absent.
final class NetworkClassifierTests: XCTestCase {
    func testInterfaceRules() {
        typealias F = InterfaceClassifier.Facts
        XCTAssertEqual(InterfaceClassifier.classify(F(name: "eth0", wireless: true)), .wifi, "wireless/ or phy80211 → Wi-Fi")
        XCTAssertEqual(InterfaceClassifier.classify(F(name: "usb0", devtype: "wlan")), .wifi)
        XCTAssertEqual(InterfaceClassifier.classify(F(name: "usb0", devtype: "wwan")), .cellular, "DEVTYPE=wwan → cellular")
        for name in ["wwan0", "ppp0", "rmnet_data0"] {
            XCTAssertEqual(InterfaceClassifier.classify(F(name: name)), .cellular, name)
        }
        XCTAssertEqual(InterfaceClassifier.classify(F(name: "wlan0")), .wifi)
        XCTAssertEqual(InterfaceClassifier.classify(F(name: "wlp3s0")), .wifi)
        for name in ["eth0", "enp0s31f6", "br0", "veth1", "usb0"] {
            XCTAssertEqual(InterfaceClassifier.classify(F(name: name)), .ethernet, name)
        }
    }

    func testProcRouteParsing() {
        let v4 = """
            Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT
            wwan0\t00000000\t0102A8C0\t0003\t0\t0\t700\t00000000\t0\t0\t0
            wlan0\t00000000\t0101A8C0\t0003\t0\t0\t600\t00000000\t0\t0\t0
            wlan0\t0001A8C0\t00000000\t0001\t0\t0\t600\t00FFFFFF\t0\t0\t0
            eth9\t00000000\t0101A8C0\t0002\t0\t0\t1\t00000000\t0\t0\t0
            """
        XCTAssertEqual(
            KernelRouteSource.defaultRoutes(v4), [.init(interface: "wwan0", metric: 700), .init(interface: "wlan0", metric: 600)],
            "only up (flag 1) routes to 0/0")
        let v6 = """
            00000000000000000000000000000000 00 00000000000000000000000000000000 00 fe800000000000000000000000000001 00000400 00000001 00000000 00000003 wwan0
            00000000000000000000000000000000 00 00000000000000000000000000000000 00 00000000000000000000000000000000 ffffffff 00000001 00000000 00200200       lo
            fe800000000000000000000000000000 40 00000000000000000000000000000000 00 00000000000000000000000000000000 00000100 00000001 00000000 00000001 wwan0
            """
        XCTAssertEqual(KernelRouteSource.defaultRoutesIPv6(v6), [.init(interface: "wwan0", metric: 0x400)])
    }

    /// A fake /proc and /sys: the lowest-metric default route that is up decides.
    func testKernelSourceOnFakeTrees() throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("netsrc-\(UUID().uuidString.prefix(8))").path
        defer { try? FileManager.default.removeItem(atPath: root) }
        let fm = FileManager.default
        try fm.createDirectory(atPath: root + "/proc", withIntermediateDirectories: true)
        for (name, extra, state) in [("wlan0", "wireless", "up"), ("modem0", nil, "up"), ("eth0", nil, "down")] as [(String, String?, String)] {
            try fm.createDirectory(atPath: "\(root)/sys/\(name)", withIntermediateDirectories: true)
            if let extra { try fm.createDirectory(atPath: "\(root)/sys/\(name)/\(extra)", withIntermediateDirectories: true) }
            try state.write(toFile: "\(root)/sys/\(name)/operstate", atomically: true, encoding: .utf8)
        }
        try "DEVTYPE=wwan\nINTERFACE=modem0\n".write(toFile: "\(root)/sys/modem0/uevent", atomically: true, encoding: .utf8)
        func routes(_ lines: [(String, Int)]) throws {
            let text =
                "Iface\tDestination\tGateway\tFlags\tRefCnt\tUse\tMetric\tMask\tMTU\tWindow\tIRTT\n"
                + lines.map { "\($0.0)\t00000000\t0101A8C0\t0003\t0\t0\t\($0.1)\t00000000\t0\t0\t0" }.joined(separator: "\n")
            try text.write(toFile: root + "/proc/route", atomically: true, encoding: .utf8)
        }
        let source = KernelRouteSource(procDirectory: root + "/proc", sysfs: root + "/sys")
        try routes([("modem0", 700), ("wlan0", 600)])
        XCTAssertEqual(try source.read(), NetworkState(type: .wifi, metered: false, interface: "wlan0", source: "kernel"))
        try routes([("modem0", 700), ("wlan0", 900)])
        XCTAssertEqual(try source.read(), NetworkState(type: .cellular, metered: true, interface: "modem0", source: "kernel"))
        try routes([("eth0", 1)])
        XCTAssertEqual(try source.read()?.type, NetworkType.none, "a route over a link that is down does not count")
        try routes([])
        XCTAssertEqual(try source.read()?.type, NetworkType.none)
        try FileManager.default.removeItem(atPath: root + "/proc/route")
        XCTAssertThrowsError(try source.read(), "a route table it cannot read is not \"no network\"")
    }

    /// A source that cannot look leaves the state as it was (and publishes nothing); once it
    /// reads again, the real answer comes through.
    func testMonitorKeepsItsStateWhileBlind() async throws {
        let source = ScriptedSource(.success(NetworkState(type: .ethernet, metered: false, interface: "eth0", source: "kernel")))
        let hub = EventHub(backlog: 16)
        let monitor = await NetworkMonitor(sources: [source], events: DownloaderEvents(hub: hub), logger: Logger(label: "test"))
        let ethernet = await monitor.state
        XCTAssertEqual(ethernet.type, .ethernet)
        source.next = .failure(NetworkSourceError(source: "kernel", reason: "cannot read /proc/self/net/route: Too many open files"))
        let blind = await monitor.refresh()
        XCTAssertEqual(blind, ethernet, "out of descriptors is not no network")
        source.next = .success(NetworkState(type: .none, metered: false, interface: nil, source: "kernel"))
        let none = await monitor.refresh()
        XCTAssertEqual(none.type, NetworkType.none, "a real answer still comes through")
    }

    func testNetworkManagerClassification() {
        typealias NM = NetworkManagerSource
        XCTAssertEqual(NM.classify(state: 70, primaryConnectionType: "802-11-wireless", metered: 4).type, .wifi)
        XCTAssertFalse(NM.classify(state: 70, primaryConnectionType: "802-11-wireless", metered: 4).metered)
        XCTAssertTrue(NM.classify(state: 70, primaryConnectionType: "802-11-wireless", metered: 1).metered, "a hotspot marked metered")
        XCTAssertTrue(NM.classify(state: 70, primaryConnectionType: "802-11-wireless", metered: 3).metered, "guessed metered")
        XCTAssertEqual(
            NM.classify(state: 70, primaryConnectionType: "gsm", metered: 0),
            NetworkState(type: .cellular, metered: true, interface: nil, source: "networkmanager"))
        XCTAssertEqual(NM.classify(state: 60, primaryConnectionType: "802-3-ethernet", metered: 2).type, .ethernet)
        XCTAssertEqual(NM.classify(state: 20, primaryConnectionType: "802-3-ethernet", metered: 0).type, NetworkType.none, "disconnected")
        XCTAssertEqual(NM.classify(state: 70, primaryConnectionType: "", metered: 0).type, NetworkType.none, "no primary connection")
    }

    /// No NetworkManager here (no system bus): it answers nil at once, the kernel decides,
    /// and within the retry window the bus is not asked again.
    func testNetworkManagerAbsentFailsOver() {
        let nm = NetworkManagerSource(retrySeconds: 60)
        let started = Date()
        XCTAssertNil(nm.read())
        XCTAssertNil(nm.read())
        XCTAssertLessThan(Date().timeIntervalSince(started), 3, "an absent bus must not block the poll")
        let kernel = KernelRouteSource()
        XCTAssertNotNil(try kernel.read(), "the kernel source answers where /proc is readable")
    }

    func testPolicyVerdicts() {
        var policy = DownloadPolicy()
        func net(_ type: NetworkType, metered: Bool = false) -> NetworkState {
            NetworkState(type: type, metered: metered, interface: nil, source: "override")
        }
        XCTAssertEqual(policy.verdict(on: net(.wifi)), .allowed)
        XCTAssertEqual(policy.verdict(on: net(.ethernet)), .allowed)
        XCTAssertEqual(policy.verdict(on: net(.cellular, metered: true)).name, "allowCellularItemsOnly")
        XCTAssertEqual(policy.verdict(on: net(.wifi, metered: true)).name, "allowCellularItemsOnly", "metered Wi-Fi counts as cellular")
        XCTAssertEqual(policy.verdict(on: net(.none)).name, "none")
        policy.allowMetered = true
        XCTAssertEqual(policy.verdict(on: net(.wifi, metered: true)), .allowed)
        XCTAssertEqual(policy.verdict(on: net(.cellular, metered: true)).name, "allowCellularItemsOnly")
        policy.allowCellular = true
        XCTAssertEqual(policy.verdict(on: net(.cellular, metered: true)), .allowed)
        XCTAssertEqual(DownloadPolicy().minFreeBytes, 1 << 30, "1 GiB kept free by default")
        XCTAssertFalse(DownloadPolicy().allowCellular)
    }

    func testPolicyChangesAreCheckedWhole() throws {
        let policy = DownloadPolicy()
        XCTAssertThrowsError(try policy.applying(["allowCellular": true, "minFreeBytes": -1])) { error in
            XCTAssertTrue((error as? RPCError)?.message.contains("params.minFreeBytes") == true, "\(error)")
        }
        XCTAssertThrowsError(try policy.applying(["maxParallel": 0]))
        XCTAssertThrowsError(try policy.applying(["offlineAudioQuality": "ULTRA"]))
        XCTAssertThrowsError(try policy.applying(["bogus": 1]))
        let next = try policy.applying(["allowCellular": true, "maxCacheBytes": 1000, "offlineVideoQuality": "LOW"])
        XCTAssertTrue(next.allowCellular)
        XCTAssertEqual(next.maxCacheBytes, 1000)
        XCTAssertEqual(next.offlineQuality(productType: "VIDEO"), "LOW")
        XCTAssertEqual(next.offlineQuality(productType: "TRACK"), "HIGH")
        XCTAssertNil(try next.applying(["maxCacheBytes": nil]).maxCacheBytes, "null clears the bound")
    }

    func testRoomCountsBlocksAndSaysWhatIsMissing() {
        let room = StorageBudget.Room(
            freeBytes: 3 << 20, minFreeBytes: 1 << 20, cacheUsedBytes: 0, maxCacheBytes: nil,
            reservedBytes: 512 << 10, blockSize: 4096)
        XCTAssertEqual(room.available, (3 << 20) - (1 << 20) - (512 << 10))
        XCTAssertEqual(room.need(size: 4097, onDisk: 0), 8192)
        XCTAssertEqual(room.need(size: 10_000, onDisk: 4096), 8192)
        let reason = room.shortage(need: 2 << 20)
        XCTAssertTrue(reason.hasPrefix("needs 512.0 KiB (524288 bytes) more"), reason)
        var capped = room
        capped.maxCacheBytes = 1 << 20
        capped.cacheUsedBytes = 256 << 10
        capped.cacheReservedBytes = 512 << 10
        XCTAssertEqual(capped.available, 256 << 10, "maxCacheBytes less what is used and what running downloads will hold")
        capped.reserve(128 << 10)
        XCTAssertEqual(capped.available, 128 << 10, "an admitted file counts against the cache at once")
    }
}

/// A network source whose next answer the test sets.
private final class ScriptedSource: NetworkSource, @unchecked Sendable {
    private let lock = NSLock()
    private var answer: Result<NetworkState, NetworkSourceError>
    init(_ answer: Result<NetworkState, NetworkSourceError>) { self.answer = answer }
    var name: String { "scripted" }
    var next: Result<NetworkState, NetworkSourceError> {
        get { lock.withLock { answer } }
        set { lock.withLock { answer = newValue } }
    }
    func read() throws -> NetworkState? { try next.get() }
}
