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
    ],
    targets: [
        // generate: a large history in SQLite; reference: the physical outbox-insert baseline;
        // report: medians and targets into BENCHMARKS.md.
        .executableTarget(
            name: "digest-bench",
            dependencies: [
                .product(name: "DigestCore", package: "digest"),
                .product(name: "DigestStore", package: "digest"),
                .product(name: "DigestSQLite", package: "digest"),
                .product(name: "DigestDemo", package: "digest"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            swiftSettings: swiftSettings
        )
    ]
)
