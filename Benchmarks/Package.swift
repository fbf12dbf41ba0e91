// swift-tools-version:6.1
import PackageDescription

// The benchmark harness, in its own package so that users of the library never resolve it.
// `make bench` (scripts/bench.sh) builds it in release mode and writes BENCHMARKS.md.

/// Settings applied to every target, as in the root package.
let swiftSettings: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("MemberImportVisibility"),
    .enableUpcomingFeature("InternalImportsByDefault"),
]

let package = Package(
    name: "digest-benchmarks",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(name: "digest", path: "../"),
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.100.0"),
        .package(url: "https://github.com/swift-server/async-http-client", from: "1.37.0"),
    ],
    targets: [
        // The demo's generator (DemoHistory, its vocabulary, SplitMix64) and loopback server: the root
        // package's DigestDemo files, linked here (symbolic links) because DigestDemo is not a library
        // product; digest-bench generates the same history as `digest demo`.
        .target(
            name: "DemoSupport",
            dependencies: [
                .product(name: "DigestCore", package: "digest"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
            ],
            swiftSettings: swiftSettings
        ),
        // generate: a large history in SQLite; reference: the physical outbox-insert baseline;
        // report: medians and targets into BENCHMARKS.md; images: the image benchmarks' drivers.
        .executableTarget(
            name: "digest-bench",
            dependencies: [
                "DemoSupport",
                .product(name: "DigestCore", package: "digest"),
                .product(name: "DigestStore", package: "digest"),
                .product(name: "DigestSQLite", package: "digest"),
                .product(name: "DigestImageCodecs", package: "digest"),
                .product(name: "DigestImages", package: "digest"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            swiftSettings: swiftSettings
        ),
        // async-http-client alone against the fake FCM server (no outbox, no OAuth): the ceiling of the
        // sender's HTTP path, for scripts/bench-send.sh (the sender's request path through its
        // `@_spi(Benchmarks)` declarations).
        .executableTarget(
            name: "digest-fcm-load",
            dependencies: [
                .product(name: "DigestSender", package: "digest"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ],
            swiftSettings: swiftSettings
        ),
    ]
)
