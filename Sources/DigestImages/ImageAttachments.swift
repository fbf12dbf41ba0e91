public import DigestCore
public import DigestImageCodecs
public import Foundation
public import Logging
import NIOCore
import NIOPosix

/// The attachment provider of a run: downloads each article image once, makes its hero and icon
/// renditions into the attachment store, and answers every user whose top pick shares the image
/// with the same outcome — failures included.
///
/// Downloads run at most `maxConcurrentDownloads` at a time; decoding and encoding run on a pool of
/// `renderThreads` threads (CPU work stays off the concurrency pool).
///
/// ```swift
/// try await ImageAttachments.with(configuration) { attachments in
///     let run = WeeklyRun(database: db, templates: catalog, attachments: attachments, configuration: c)
///     _ = try await run.run()
/// }
/// ```
public actor ImageAttachments: AttachmentProvider, AttachmentStatistics {
    /// Where files go and how images are fetched and made.
    public struct Configuration: Sendable {
        /// The attachments directory.
        public var directory: URL
        /// The public URL the directory is served under.
        public var baseURL: String
        public var downloader = ImageDownloader.Configuration()
        public var maker = RenditionMaker.Configuration()
        public var hero = RenditionSpec.hero
        public var icon: RenditionSpec? = RenditionSpec.icon
        public var maxConcurrentDownloads = 16
        public var renderThreads = max(1, ProcessInfo.processInfo.activeProcessorCount)

        public init(directory: URL, baseURL: String) {
            self.directory = directory
            self.baseURL = baseURL
        }
    }

    public let configuration: Configuration
    private let store: AttachmentStore
    private let downloader: ImageDownloader
    private let renderPool: NIOThreadPool
    private let logger: Logger
    private var outcomes: [String: Task<ImageOutcome, Never>] = [:]
    private var counts: [String: Int] = [:]
    private var downloadSlots: Int
    private var waitingForSlot: [CheckedContinuation<Void, Never>] = []

    private init(configuration: Configuration, renderPool: NIOThreadPool, logger: Logger) throws(ImageError) {
        self.configuration = configuration
        self.store = try AttachmentStore(directory: configuration.directory, baseURL: configuration.baseURL)
        self.downloader = ImageDownloader(configuration: configuration.downloader)
        self.renderPool = renderPool
        self.logger = logger
        self.downloadSlots = max(1, configuration.maxConcurrentDownloads)
    }

    /// Runs `body` with a provider and shuts its threads down afterwards.
    public static func with<T: Sendable>(
        _ configuration: Configuration, logger: Logger = Logger(label: "digest.images"),
        _ body: (ImageAttachments) async throws -> T
    ) async throws -> T {
        let pool = NIOThreadPool(numberOfThreads: max(1, configuration.renderThreads))
        pool.start()
        let attachments: ImageAttachments
        do {
            attachments = try ImageAttachments(configuration: configuration, renderPool: pool, logger: logger)
        } catch {
            try? await pool.shutdownGracefully()
            throw error
        }
        do {
            let result = try await body(attachments)
            await attachments.drain()
            try? await pool.shutdownGracefully()
            return result
        } catch {
            await attachments.drain()
            try? await pool.shutdownGracefully()
            throw error
        }
    }

    public func renditions(forImageAt url: String) async -> ImageOutcome {
        if let known = outcomes[url] { return await known.value }
        let task = Task { await self.make(url) }
        outcomes[url] = task
        return await task.value
    }

    /// `downloads` (distinct URLs requested), `fetched` (made into new files), `reused` (files already
    /// there), `failed:<reason>`, `content_type_mismatch`.
    public func statistics() async -> [String: Int] { counts }

    /// Waits for every image being made.
    func drain() async {
        for task in outcomes.values { _ = await task.value }
    }

    private func make(_ url: String) async -> ImageOutcome {
        do throws(ImageError) {
            let download = try await withDownloadSlot { () async throws(ImageError) -> ImageDownloader.Download in
                counts["downloads", default: 0] += 1
                return try await downloader.fetch(url)
            }
            let sniffed = ImageKind(sniffing: download.bytes)
            if let declared = download.contentType, let actual = sniffed.mimeType, declared != actual,
                !(declared == "image/jpg" && actual == "image/jpeg")
            {
                counts["content_type_mismatch", default: 0] += 1
                logger.warning(
                    "content type disagrees with the bytes",
                    metadata: ["digest.url": "\(url)", "digest.declared": "\(declared)", "digest.sniffed": "\(actual)"])
            }
            let produced = try await produce(download.bytes)
            counts[produced.reused ? "reused" : "fetched", default: 0] += 1
            return .ready(produced.renditions)
        } catch {
            counts["failed:\(error.reason)", default: 0] += 1
            logger.info("image unavailable", metadata: ["digest.url": "\(url)", "digest.reason": "\(error.reason)", "digest.error": "\(error)"])
            return .unavailable(reason: error.reason)
        }
    }

    /// The renditions of `source`: files already in the store, or newly made (on the render pool).
    private struct Produced: Sendable {
        var renditions: ImageRenditions
        /// The files were already in the store.
        var reused: Bool
    }

    private func produce(_ source: [UInt8]) async throws(ImageError) -> Produced {
        let store = self.store
        let hero = configuration.hero
        let icon = configuration.icon
        let maker = RenditionMaker(configuration: configuration.maker)
        do {
            return try await renderPool.runIfActive { () throws -> Produced in
                let hash = AttachmentStore.sourceHash(source)
                let specs = [hero] + (icon.map { [$0] } ?? [])
                let stems = specs.map { AttachmentStore.stem(sourceHash: hash, spec: $0) }
                let present = stems.map { store.existing(stem: $0) }
                let kind = ImageKind(sniffing: source)
                if kind == .gif, let file = present[0] {
                    let header = try GIFHeader(source)
                    let rendition = Rendition(
                        url: store.url(of: file.name), mimeType: "image/gif", width: header.width, height: header.height, byteCount: file.bytes)
                    return Produced(renditions: ImageRenditions(hero: rendition, icon: nil), reused: true)
                }
                if kind != .gif, present.allSatisfy({ $0 != nil }) {
                    let renditions = zip(specs, present).map { spec, file in
                        Rendition(
                            url: store.url(of: file!.name), mimeType: Self.mimeType(ofFile: file!.name), width: spec.width,
                            height: spec.height, byteCount: file!.bytes)
                    }
                    return Produced(renditions: ImageRenditions(hero: renditions[0], icon: renditions.count > 1 ? renditions[1] : nil), reused: true)
                }
                let made = try maker.render(source, specs: specs)
                var renditions: [String: Rendition] = [:]
                for image in made {
                    let stem = AttachmentStore.stem(sourceHash: hash, spec: image.spec)
                    let name = try store.write(image.data, stem: stem, mimeType: image.mimeType)
                    renditions[image.spec.name] = Rendition(
                        url: store.url(of: name), mimeType: image.mimeType, width: image.width, height: image.height,
                        byteCount: image.data.count)
                }
                guard let heroRendition = renditions[hero.name] else {
                    throw ImageError(.corrupt, "no hero rendition was made")
                }
                return Produced(renditions: ImageRenditions(hero: heroRendition, icon: icon.flatMap { renditions[$0.name] }), reused: false)
            }
        } catch let error as ImageError {
            throw error
        } catch {
            throw ImageError(.corrupt, "rendering stopped: \(error)")
        }
    }

    static func mimeType(ofFile name: String) -> String {
        if name.hasSuffix(".png") { return "image/png" }
        if name.hasSuffix(".gif") { return "image/gif" }
        return "image/jpeg"
    }

    private func withDownloadSlot<T: Sendable>(_ body: () async throws(ImageError) -> T) async throws(ImageError) -> T {
        if downloadSlots > 0 {
            downloadSlots -= 1
        } else {
            await withCheckedContinuation { waitingForSlot.append($0) }
        }
        defer {
            if waitingForSlot.isEmpty {
                downloadSlots += 1
            } else {
                waitingForSlot.removeFirst().resume()
            }
        }
        return try await body()
    }
}
