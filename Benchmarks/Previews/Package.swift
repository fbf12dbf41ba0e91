// swift-tools-version:6.1
import PackageDescription

// The previews' benchmark, in its own package so users of the library never resolve it.
let package = Package(
    name: "PreviewBenchmark",
    platforms: [.macOS(.v15)],
    dependencies: [.package(name: "digest", path: "../../")],
    targets: [
        .executableTarget(
            name: "PreviewBenchmark",
            dependencies: [.product(name: "DigestPreview", package: "digest")]
        )
    ]
)
