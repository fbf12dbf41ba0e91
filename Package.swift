// swift-tools-version:6.1
import PackageDescription

/// Settings applied to every target, tests included.
let swiftSettings: [SwiftSetting] = [
    // `any P` spelled out wherever an existential is used.
    .enableUpcomingFeature("ExistentialAny"),
    // A member is visible only where its module is imported.
    .enableUpcomingFeature("MemberImportVisibility"),
    // `import X` is internal unless written `public import X`.
    .enableUpcomingFeature("InternalImportsByDefault"),
]

// What each target is and may import, and where each step of the weekly path lives: one map,
// docs/006-targets-and-threads.md. The comments below only name each target.
let package = Package(
    name: "digest",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "digest", targets: ["digest"]),
        .library(name: "DigestCore", targets: ["DigestCore"]),
        .library(name: "DigestStore", targets: ["DigestStore"]),
        .library(name: "DigestSQLite", targets: ["DigestSQLite"]),
        .library(name: "DigestPostgres", targets: ["DigestPostgres"]),
        .library(name: "DigestRun", targets: ["DigestRun"]),
        .library(name: "DigestSender", targets: ["DigestSender"]),
        .library(name: "DigestImageCodecs", targets: ["DigestImageCodecs"]),
        .library(name: "DigestImages", targets: ["DigestImages"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
        .package(url: "https://github.com/apple/swift-log", from: "1.6.0"),
        .package(url: "https://github.com/apple/swift-crypto", "3.12.0"..<"5.0.0"),
        .package(url: "https://github.com/hummingbird-project/swift-mustache", from: "2.1.0"),
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.0"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.100.0"),
        .package(url: "https://github.com/swift-server/async-http-client", from: "1.37.0"),
        .package(url: "https://github.com/apple/swift-nio-http2", from: "1.36.0"),
        .package(url: "https://github.com/apple/swift-nio-ssl", from: "2.30.0"),
        .package(url: "https://github.com/apple/swift-metrics", from: "2.5.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.1.0"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.6.0"),
        .package(url: "https://github.com/vapor/postgres-nio", from: "1.33.0"),
    ],
    targets: [
        // System SQLite (Debian libsqlite3-dev).
        .systemLibrary(
            name: "CSQLite",
            pkgConfig: "sqlite3",
            providers: [.apt(["libsqlite3-dev"])]
        ),
        // Pango and Cairo (Debian libpango1.0-dev, libcairo2-dev) for the previews' text and drawing.
        .systemLibrary(
            name: "CPangoCairo",
            pkgConfig: "pangocairo",
            providers: [.apt(["libpango1.0-dev", "libcairo2-dev"])]
        ),
        // GdkPixbuf (Debian libgdk-pixbuf-2.0-dev) decodes the JPEG/PNG/GIF renditions the previews show.
        .systemLibrary(
            name: "CGdkPixbuf",
            pkgConfig: "gdk-pixbuf-2.0",
            providers: [.apt(["libgdk-pixbuf-2.0-dev"])]
        ),
        // System libjpeg-turbo (Debian libjpeg-dev).
        .systemLibrary(
            name: "CJPEG",
            pkgConfig: "libjpeg",
            providers: [.apt(["libjpeg-dev"])]
        ),
        // System libpng 1.6 (Debian libpng-dev).
        .systemLibrary(
            name: "CPNG",
            pkgConfig: "libpng",
            providers: [.apt(["libpng-dev"])]
        ),
        // The only code that calls setjmp/longjmp: libjpeg's error exits land here and come back as a
        // status and a message, never as a jump over Swift frames or a call to exit().
        .target(
            name: "CImageShim",
            dependencies: ["CJPEG", "CPNG"]
        ),
        // Sniffing, decoding, resampling, encoding: pure CPU work on bytes, no I/O (fuzzed on its own).
        .target(
            name: "DigestImageCodecs",
            dependencies: ["CImageShim", "CPNG"],
            // Pixel loops are 50–100× slower unoptimised: build this target with -O in debug too, so
            // `make demo` and `make test` stay quick.
            swiftSettings: swiftSettings + [.unsafeFlags(["-O"], .when(configuration: .debug))]
        ),
        // Running Swift tasks on NIO event loops.
        .target(
            name: "DigestNIO",
            dependencies: [.product(name: "NIOCore", package: "swift-nio")],
            swiftSettings: swiftSettings
        ),
        // The attachment store, the guarded downloader and the run's attachment provider.
        .target(
            name: "DigestImages",
            dependencies: [
                "DigestCore", "DigestImageCodecs", "DigestThreads",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings
        ),
        // Domain values, week maths, digests, templates, text rules, planning, every provider's encoding.
        .target(
            name: "DigestCore",
            dependencies: [
                .product(name: "Mustache", package: "swift-mustache"),
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            swiftSettings: swiftSettings
        ),
        // A thread of its own that owns a resource (a SQLite connection, a Pango renderer) and runs
        // blocking jobs on it for async callers: the one place outside NIO that makes threads; and the
        // one waiting line (AsyncSemaphore, ResourcePool) for whatever is borrowed or limited.
        .target(
            name: "DigestThreads",
            swiftSettings: swiftSettings
        ),
        // The store's contract: history, run ledger, outbox consumer, import and event sinks, the
        // outbox state machine. No backend, no C, no NIO.
        .target(
            name: "DigestStore",
            dependencies: ["DigestCore"],
            swiftSettings: swiftSettings
        ),
        // Reading the input files: JSON Lines of users, articles and reads, checked line by line
        // (its JSON parser reads the apps' event bodies too), written through a store's import sink.
        .target(
            name: "DigestImport",
            dependencies: ["DigestCore", "DigestStore"],
            swiftSettings: swiftSettings
        ),
        // The embedded store: SQLite, its connections on threads of their own.
        .target(
            name: "DigestSQLite",
            dependencies: ["DigestCore", "DigestStore", "DigestThreads", "CSQLite"],
            swiftSettings: swiftSettings
        ),
        // The shared store: PostgreSQL through PostgresNIO's async API, runs shared by chunk leases.
        .target(
            name: "DigestPostgres",
            dependencies: [
                "DigestCore", "DigestStore",
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            swiftSettings: swiftSettings
        ),
        // The weekly run: batching, concurrency, bookkeeping, progress, summary.
        .target(
            name: "DigestRun",
            dependencies: [
                "DigestCore", "DigestStore",
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings
        ),
        // What `digest demo` and digest-bench bring along (not a product): the sample data set and its
        // generated history, the sample pictures, the loopback server of its pictures.
        .target(
            name: "DigestDemo",
            dependencies: [
                "DigestCore", "DigestStore", "DigestImageCodecs", "DigestNIO",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
            ],
            swiftSettings: swiftSettings
        ),
        // The reference outbox consumer: one sender core and a transport per provider (FCM HTTP v1,
        // APNs, Web Push).
        .target(
            name: "DigestSender",
            dependencies: [
                "DigestCore", "DigestStore", "DigestNIO",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOHTTP2", package: "swift-nio-http2"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "NIOTLS", package: "swift-nio"),
                .product(name: "NIOHPACK", package: "swift-nio-http2"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            swiftSettings: swiftSettings
        ),
        // PNG previews of an FCM v1 message per platform surface and state.
        .target(
            name: "DigestPreview",
            dependencies: [
                "DigestCore", "DigestThreads", "CPangoCairo", "CGdkPixbuf",
            ],
            swiftSettings: swiftSettings
        ),
        // The editors' preview pages (Hummingbird).
        .target(
            name: "DigestServer",
            dependencies: [
                "DigestCore", "DigestStore", "DigestPreview", "DigestReport",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            swiftSettings: swiftSettings
        ),
        // The week's delivery and open report (`digest report`, the preview page's figures): counts in,
        // rates with their intervals out; no I/O.
        .target(
            name: "DigestReport",
            dependencies: ["DigestStore"],
            swiftSettings: swiftSettings
        ),
        // App events in (`digest collect`): the batch parser and the collector's HTTP endpoint.
        .target(
            name: "DigestEvents",
            dependencies: [
                "DigestStore", "DigestImport",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            swiftSettings: swiftSettings
        ),
        // The fake servers (FCM HTTP v1 over HTTP/1.1 and HTTP/2, APNs over HTTP/2, the GCE metadata
        // server, a Web Push service) with the test CA: behind the tests, `digest-fake-fcm` (for `make
        // demo-send` and the delivery benchmark), `digest-fake-apns` and `digest-fake-webpush`.
        .target(
            name: "DigestFakes",
            dependencies: [
                "DigestCore",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOHTTP2", package: "swift-nio-http2"),
                .product(name: "NIOHPACK", package: "swift-nio-http2"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
            ],
            swiftSettings: swiftSettings
        ),
        // What the test targets share (linked by them only): fixtures, the backend harness and the
        // conformance suites every store runs (swift-testing suites, found in whichever test bundle
        // links this), an in-memory attachment provider, the binary runner, a Hummingbird app on a
        // loopback port; the fakes re-exported.
        .target(
            name: "DigestTesting",
            dependencies: [
                "DigestCore", "DigestStore", "DigestImport", "DigestSQLite", "DigestPostgres", "DigestDemo", "DigestImages",
                "DigestFakes",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ],
            exclude: ["Fixtures"],
            swiftSettings: swiftSettings
        ),
        // The fake FCM server as a program, for `make demo-send` and the delivery benchmark.
        .executableTarget(
            name: "digest-fake-fcm",
            dependencies: [
                "DigestFakes",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            swiftSettings: swiftSettings
        ),
        // The fake APNs server as a program, for demos, benchmarks and scripts against a real client.
        .executableTarget(
            name: "digest-fake-apns",
            dependencies: [
                "DigestFakes",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            swiftSettings: swiftSettings
        ),
        // The fake Web Push service as a program, for `make demo-send` and the delivery benchmark.
        .executableTarget(
            name: "digest-fake-webpush",
            dependencies: [
                "DigestFakes", "DigestDemo", "DigestCore",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            swiftSettings: swiftSettings
        ),
        // The benchmark harness (scripts/bench*.sh, release builds): generate a large history in SQLite,
        // the physical outbox-insert reference, the report into BENCHMARKS.md, the image drivers. An
        // executable target, not a product: users of the library never build it; `swift build` does.
        .executableTarget(
            name: "digest-bench",
            dependencies: [
                "DigestCore", "DigestStore", "DigestSQLite", "DigestImageCodecs", "DigestImages", "DigestDemo",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            swiftSettings: swiftSettings
        ),
        // async-http-client alone against the fake FCM server (no outbox, no OAuth): the ceiling of the
        // sender's HTTP path, for scripts/bench-send.sh.
        .executableTarget(
            name: "digest-fcm-load",
            dependencies: [
                "DigestSender", "DigestNIO",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ],
            swiftSettings: swiftSettings
        ),
        // Time per preview PNG for each surface and state, for scripts/bench-previews.sh.
        .executableTarget(
            name: "PreviewBenchmark",
            dependencies: ["DigestCore", "DigestPreview"],
            swiftSettings: swiftSettings
        ),
        // The command line.
        .executableTarget(
            name: "digest",
            dependencies: [
                "DigestCore", "DigestStore", "DigestImport", "DigestSQLite", "DigestPostgres", "DigestRun", "DigestPreview",
                "DigestServer", "DigestSender", "DigestImageCodecs", "DigestImages", "DigestDemo", "DigestEvents", "DigestReport",
                "DigestThreads",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ],
            swiftSettings: swiftSettings,
            // jemalloc in place of glibc's malloc (Debian's libjemalloc-dev, installed by scripts/setup.sh):
            // the run and the sender allocate many small, short-lived objects from several threads,
            // where glibc's arenas spend a tenth of the run's CPU (BENCHMARKS.md).
            linkerSettings: [.linkedLibrary("jemalloc", .when(platforms: [.linux]))]
        ),
        // libFuzzer entry for the decoders; see docs/002-images.md for the build command.
        .executableTarget(
            name: "DigestImagesFuzz",
            dependencies: ["DigestImageCodecs"],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "DigestCoreTests",
            dependencies: ["DigestCore", "DigestDemo"],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "DigestThreadsTests",
            dependencies: ["DigestThreads"],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "DigestStoreTests",
            dependencies: ["DigestStore"],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "DigestImportTests",
            dependencies: ["DigestCore", "DigestStore", "DigestImport", "DigestDemo", "DigestTesting"],
            swiftSettings: swiftSettings
        ),
        // The backends' own tests; what both must do is in DigestTesting's conformance suites, which
        // run in this bundle (every test target links into one on Linux).
        .testTarget(
            name: "DigestSQLiteTests",
            dependencies: ["DigestCore", "DigestStore", "DigestImport", "DigestSQLite", "DigestTesting"],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "DigestPostgresTests",
            dependencies: [
                "DigestStore", "DigestPostgres", "DigestTesting",
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "DigestImageCodecsTests",
            dependencies: ["DigestCore", "DigestImageCodecs", "DigestDemo", "DigestTesting"],
            exclude: ["Corpus"],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "DigestImagesTests",
            dependencies: [
                "DigestCore", "DigestStore", "DigestSQLite", "DigestImageCodecs", "DigestImages", "DigestDemo", "DigestTesting",
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "DigestReportTests",
            dependencies: ["DigestCore", "DigestStore", "DigestReport", "DigestTesting"],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "DigestEventsTests",
            dependencies: [
                "DigestCore", "DigestStore", "DigestSQLite", "DigestPostgres", "DigestEvents", "DigestDemo", "DigestTesting",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "DigestRunTests",
            dependencies: [
                "DigestCore", "DigestStore", "DigestImport", "DigestSQLite", "DigestPostgres", "DigestRun", "DigestDemo", "DigestTesting",
                "DigestSender",
            ],
            exclude: ["Fixtures"],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "DigestSenderTests",
            dependencies: [
                "DigestCore", "DigestStore", "DigestSQLite", "DigestPostgres", "DigestSender", "DigestTesting", "DigestFakes",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOHTTP2", package: "swift-nio-http2"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
            ],
            swiftSettings: swiftSettings
        ),
        // The fake servers' own tests (what the senders do against them is in DigestSenderTests).
        .testTarget(
            name: "DigestFakesTests",
            dependencies: [
                "DigestFakes", "DigestTesting",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOHTTP2", package: "swift-nio-http2"),
                .product(name: "NIOHPACK", package: "swift-nio-http2"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "DigestPreviewTests",
            dependencies: ["DigestCore", "DigestPreview"],
            exclude: ["Goldens", "Fixtures"],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "DigestServerTests",
            dependencies: [
                "DigestCore", "DigestStore", "DigestSQLite", "DigestRun", "DigestPreview", "DigestServer", "DigestTesting",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdTesting", package: "hummingbird"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings
        ),
    ]
)
