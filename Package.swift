// swift-tools-version:6.0
import PackageDescription

/// Cassette: three daemons (downloader, player, reporter), the `cassettectl` CLI and a
/// reference content origin. Each raw C module (`CCurl`, `CSystemd`, `CALSA`, `CFFmpeg`) is
/// imported by exactly one Swift wrapper module and carries its own `static inline` shims, so
/// a binary links a C library only when it uses its wrapper; libcurl and FFmpeg are not linked
/// at all but opened on first use; see docs/architecture.md.
let package = Package(
    name: "Cassette",
    platforms: [.macOS(.v14)],
    products: [
        .executable(name: "downloader", targets: ["downloader"]),
        .executable(name: "player", targets: ["player"]),
        .executable(name: "reporter", targets: ["reporter"]),
        .executable(name: "cassettectl", targets: ["cassettectl"]),
        .executable(name: "cassette-origin", targets: ["cassette-origin"]),
        .executable(name: "cassette-bench", targets: ["cassette-bench"]),
        .executable(name: "footprint-floor", targets: ["footprint-floor"]),
        // A test fixture: an ALSA PCM plugin that underruns once (`libCassetteUnderrunPCM.so`,
        // loaded by alsa-lib from a test's ALSA configuration); no Cassette binary links it.
        .library(name: "CassetteUnderrunPCM", type: .dynamic, targets: ["CassetteUnderrunPCM"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
        .package(url: "https://github.com/groue/GRDB.swift.git", from: "7.10.0"),
        .package(url: "https://github.com/apple/swift-crypto.git", from: "3.12.3"),
        .package(url: "https://github.com/apple/swift-collections.git", from: "1.6.0"),
    ],
    targets: [
        // MARK: Raw C libraries (system-library targets found through pkg-config)
        // Each one's shim.h also holds typed `static inline` stand-ins for the variadic and
        // macro-only C APIs Swift cannot import: no compiled C target, so no binary links a
        // library it does not import.
        .systemLibrary(
            name: "CSystemd", path: "Shared/CSystemd", pkgConfig: "libsystemd",
            providers: [.apt(["libsystemd-dev"])]),
        .systemLibrary(
            name: "CALSA", path: "Shared/CALSA", pkgConfig: "alsa",
            providers: [.apt(["libasound2-dev"])]),
        // glibc's <malloc.h> (mallopt), which Swift's Glibc module leaves out.
        .systemLibrary(name: "CMalloc", path: "Shared/CMalloc"),
        // FFmpeg's headers, and forwarding definitions that open its libraries on first use
        // instead of linking them (see Shared/CFFmpeg/loader.c). Debian: libavformat-dev,
        // libavcodec-dev, libavutil-dev, libswresample-dev.
        .target(name: "CFFmpeg", path: "Shared/CFFmpeg", linkerSettings: [.linkedLibrary("dl")]),
        // libcurl's headers, and forwarding definitions that open it on first use instead of
        // linking it (see Shared/CCurl/loader.c). Debian: libcurl4-openssl-dev.
        .target(name: "CCurl", path: "Shared/CCurl", linkerSettings: [.linkedLibrary("dl")]),

        // MARK: Shared Swift modules
        .target(
            name: "Wire",
            dependencies: [
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
            ], path: "Shared/Wire"),
        .target(
            name: "Systemd",
            dependencies: [
                "CSystemd",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ], path: "Shared/Systemd"),
        .target(
            name: "BlockingIO",
            dependencies: [
                .product(name: "NIOPosix", package: "swift-nio")
            ], path: "Shared/BlockingIO"),
        .target(
            name: "StateDB",
            dependencies: [
                "Wire",
                .product(name: "GRDB", package: "GRDB.swift"),
            ], path: "Shared/StateDB"),
        .target(
            name: "HTTPClient",
            dependencies: [
                "CCurl", "BlockingIO",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
            ], path: "Shared/HTTPClient"),
        .target(
            name: "OriginClient",
            dependencies: [
                "HTTPClient", "Wire", "Pacing",
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
            ], path: "Shared/OriginClient"),
        // The origin API's JSON shapes that both the reference origin and the downloader use.
        .target(name: "OriginAPI", dependencies: ["Wire"], path: "Shared/OriginAPI"),
        // The `Range` request header, for the reference origin and the player's media server.
        .target(name: "HTTPRanges", path: "Shared/HTTPRanges"),
        // When to try again and how a waiting loop is woken: pure Swift, no I/O.
        .target(name: "Pacing", path: "Shared/Pacing"),
        // HLS playlists: a strict parser, URL resolution and URI rewriting; pure Swift, no I/O.
        .target(name: "HLS", path: "Shared/HLS"),
        .target(name: "AudioFormat", path: "Shared/AudioFormat"),
        .target(name: "AudioOutput", dependencies: ["AudioFormat", "CALSA"], path: "Shared/AudioOutput"),
        .target(name: "MediaDecoder", dependencies: ["AudioFormat", "CFFmpeg"], path: "Shared/MediaDecoder"),
        .target(
            name: "ServiceKit",
            dependencies: [
                "Wire", "Systemd", "StateDB", "BlockingIO", "CMalloc", "HTTPClient", "OriginClient",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ], path: "Shared/ServiceKit"),

        // MARK: Executables
        .executableTarget(
            name: "downloader",
            dependencies: [
                "ServiceKit", "BlockingIO", "Systemd", "HTTPClient", "OriginClient", "StateDB", "Wire", "HLS", "Pacing", "OriginAPI",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "DequeModule", package: "swift-collections"),
            ], path: "Services/Downloader"),
        .executableTarget(
            name: "player",
            dependencies: [
                "ServiceKit", "BlockingIO", "AudioOutput", "MediaDecoder", "OriginClient", "StateDB", "HTTPClient", "Wire", "HLS", "Pacing",
                "HTTPRanges", "Systemd",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ], path: "Services/Player"),
        .executableTarget(
            name: "reporter",
            dependencies: [
                "ServiceKit", "Systemd", "BlockingIO", "HTTPClient", "OriginClient", "StateDB", "Wire", "Pacing",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ], path: "Services/Reporter"),
        .executableTarget(
            name: "cassettectl",
            dependencies: [
                "Wire",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ], path: "Services/Ctl"),
        .executableTarget(
            name: "cassette-origin",
            dependencies: [
                "Wire", "HTTPRanges", "OriginAPI",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ], path: "Services/Origin"),
        .executableTarget(
            name: "cassette-bench",
            dependencies: [
                "Wire", "TestSupport",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
            ], path: "Tests/Benchmarks"),
        // The libraries under every daemon and nothing of Cassette: `cassette-bench footprint`'s floor.
        .executableTarget(
            name: "footprint-floor",
            dependencies: [
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ], path: "Tests/FootprintFloor"),

        // MARK: Tests
        // Built with `-DPIC` so that alsa-lib's plugin macros name the dynamic version symbol.
        .target(
            name: "CassetteUnderrunPCM", path: "Tests/ALSAUnderrunPlugin",
            cSettings: [.define("PIC")], linkerSettings: [.linkedLibrary("asound")]),
        .target(name: "TestSupport", dependencies: ["Wire", "HTTPClient"], path: "Tests/TestSupport"),
        .testTarget(
            name: "WireTests",
            dependencies: [
                "Wire", "TestSupport",
                .product(name: "NIOEmbedded", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
            ], path: "Tests/WireTests"),
        .testTarget(
            name: "StateDBTests",
            dependencies: [
                "StateDB", "Wire", .product(name: "GRDB", package: "GRDB.swift"),
            ], path: "Tests/StateDBTests"),
        .testTarget(
            name: "SharedLibTests",
            dependencies: [
                "Systemd", "BlockingIO", "HTTPClient", "OriginClient", "AudioOutput", "MediaDecoder", "ServiceKit", "Pacing", "HTTPRanges", "TestSupport",
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Tests/SharedLibTests"),
        .testTarget(
            name: "IntegrationTests",
            dependencies: [
                "TestSupport", "Wire", "HTTPClient", "StateDB",
                .product(name: "GRDB", package: "GRDB.swift"),
            ], path: "Tests/IntegrationTests"),
        .testTarget(name: "HLSTests", dependencies: ["HLS", "TestSupport"], path: "Tests/HLSTests"),
        // cassettectl's formatting, parsing and error wording: pure functions, no sockets.
        .testTarget(name: "CassetteCtlTests", dependencies: ["cassettectl", "Wire"], path: "Tests/CassetteCtlTests"),
        .testTarget(name: "OriginTests", dependencies: ["cassette-origin", "HTTPClient", "TestSupport"], path: "Tests/OriginTests"),
        // One suite per service: unit tests of its own logic (`@testable import` of the
        // executable) and socket-level tests against the real binaries and the reference origin.
        .testTarget(
            name: "DownloaderTests",
            dependencies: [
                "downloader", "TestSupport", "Wire", "HTTPClient", "OriginClient", "StateDB",
                .product(name: "GRDB", package: "GRDB.swift"), .product(name: "Logging", package: "swift-log"),
            ], path: "Tests/DownloaderTests"),
        .testTarget(
            name: "PlayerTests",
            dependencies: [
                "player", "TestSupport", "Wire", "HTTPClient", "StateDB", "AudioOutput", "MediaDecoder",
                .product(name: "GRDB", package: "GRDB.swift"),
            ], path: "Tests/PlayerTests"),
        .testTarget(
            name: "ReporterTests",
            dependencies: [
                "reporter", "TestSupport", "Wire", "HTTPClient", "StateDB",
                .product(name: "GRDB", package: "GRDB.swift"),
            ], path: "Tests/ReporterTests"),
    ]
)
