public import DigestCore
public import DigestImageCodecs
import DigestThreads
public import Foundation
public import Logging
import Crypto
import NIOCore
import NIOPosix

/// The attachment provider of a run: downloads each article image once, makes its hero and icon
/// renditions into the attachment store, and answers every user whose top pick shares the image
/// with the same outcome — failures included.
///
/// Downloads run at most `maxConcurrentDownloads` at a time; decoding and encoding run on a pool of
/// `renderThreads` threads (CPU work stays off the concurrency pool).
///
/// Outcomes also outlive the process: each is remembered in `<directory>/.urls/` for
/// `urlMemoLifetime`, so a later process over the same directory (the next hourly run of the week,
/// another worker) answers the URL without fetching it — as long as its rendition files are still
/// there. Permanent failures are remembered too; transient ones are not (see `URLMemo.isPermanent`).
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
        /// The processors this process may use, read once: Foundation reads the cgroup's files each
        /// time it is asked, and a configuration is made for every preview request.
        static let processors = max(1, ProcessInfo.processInfo.activeProcessorCount)

        public var maker = RenditionMaker.Configuration()
        public var hero = RenditionSpec.hero
        public var icon: RenditionSpec? = RenditionSpec.icon
        public var maxConcurrentDownloads = 16
        public var renderThreads = Self.processors
        /// How long after its fetch a URL's outcome is answered from `<directory>/.urls/` by later
        /// processes without fetching it again. Longer than the hourly runs of one week, shorter than
        /// a week, so next week's digest sees an image that changed behind its URL. Zero turns the
        /// memo off (nothing is read or written).
        public var urlMemoLifetime: Duration = .seconds(6 * 24 * 60 * 60)
        /// Now, Unix seconds: when a URL is fetched, and whether a remembered outcome is young enough.
        public var clock: @Sendable () -> Int64 = { Int64(Date().timeIntervalSince1970) }

        public init(directory: URL, baseURL: String) {
            self.directory = directory
            self.baseURL = baseURL
        }
    }

    public let configuration: Configuration
    private let store: AttachmentStore
    /// Nil when `urlMemoLifetime` is zero.
    private let memo: URLMemo?
    private let downloader: ImageDownloader
    private let renderPool: NIOThreadPool
    private let logger: Logger
    private var outcomes: [String: Task<ImageOutcome, Never>] = [:]
    private var counts: [String: Int] = [:]
    /// Downloads in flight at most (`maxConcurrentDownloads`); the others wait their turn.
    private let downloadSlots: AsyncSemaphore

    private init(configuration: Configuration, renderPool: NIOThreadPool, logger: Logger) throws(ImageError) {
        self.configuration = configuration
        self.store = try AttachmentStore(directory: configuration.directory, baseURL: configuration.baseURL)
        let lifetime = configuration.urlMemoLifetime.components.seconds
        self.memo =
            lifetime > 0
            ? URLMemo(attachments: configuration.directory, settings: Self.memoSettings(configuration), lifetime: lifetime) : nil
        self.downloader = ImageDownloader(configuration: configuration.downloader)
        self.renderPool = renderPool
        self.logger = logger
        self.downloadSlots = AsyncSemaphore(permits: max(1, configuration.maxConcurrentDownloads))
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

    /// The outcome for `url`: fetched once per provider (concurrent askers share it), or answered from
    /// the URL memo an earlier process left in the directory.
    public func renditions(forImageAt url: String) async -> ImageOutcome {
        if let known = outcomes[url] { return await known.value }
        let task = Task { await self.make(url) }
        outcomes[url] = task
        return await task.value
    }

    /// `downloads` (distinct URLs requested), `fetched` (made into new files), `reused` (files already
    /// there), `remembered` (answered from the URL memo of an earlier process, without a request; not
    /// counted in `downloads`), `failed:<reason>`, `content_type_mismatch`.
    public func statistics() async -> [String: Int] { counts }

    /// Waits for every image being made.
    func drain() async {
        for task in outcomes.values { _ = await task.value }
    }

    private func make(_ url: String) async -> ImageOutcome {
        let now = configuration.clock()
        if let memo {
            switch await lookUp(url, in: memo, now: now) {
            case .remembered(let outcome):
                counts["remembered", default: 0] += 1
                return outcome
            case .absent:
                break
            case .stale(let why):
                logger.debug("remembered outcome not used", metadata: ["digest.url": "\(url)", "digest.why": "\(why)"])
            case .unreadable(let why):
                logger.warning("URL memo entry ignored", metadata: ["digest.url": "\(url)", "digest.why": "\(why)"])
            }
        }
        let fetched = await fetch(url)
        if let memo, fetched.conclusive, let entry = memo.entry(for: url, outcome: fetched.outcome, fetchedAt: now, store: store) {
            await remember(entry, in: memo)
        }
        return fetched.outcome
    }

    /// Downloads `url` and makes its renditions. The outcome is conclusive unless making stopped for a
    /// reason that says nothing about the image (the render pool shut down, the task was cancelled).
    private func fetch(_ url: String) async -> (outcome: ImageOutcome, conclusive: Bool) {
        let failure: ImageError
        var conclusive = true
        do {
            // A task cancelled while it waits for a slot throws CancellationError: not conclusive.
            try await downloadSlots.wait()
            let download: ImageDownloader.Download
            do {
                counts["downloads", default: 0] += 1
                download = try await downloader.fetch(url)
            } catch {
                downloadSlots.signal()
                throw error
            }
            downloadSlots.signal()
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
            return (.ready(produced.renditions), true)
        } catch let error as ImageError {
            failure = error
        } catch {
            failure = ImageError(.corrupt, "rendering stopped: \(error)")
            conclusive = false
        }
        counts["failed:\(failure.reason)", default: 0] += 1
        logger.info("image unavailable", metadata: ["digest.url": "\(url)", "digest.reason": "\(failure.reason)", "digest.error": "\(failure)"])
        return (.unavailable(reason: failure.reason), conclusive)
    }

    /// The memo's entry for `url`, read on the blocking-I/O pool (the directory may be a network file
    /// system); the files of a remembered image are marked used, as reused files are.
    private func lookUp(_ url: String, in memo: URLMemo, now: Int64) async -> URLMemo.Lookup {
        let store = self.store
        do {
            return try await NIOThreadPool.singleton.runIfActive {
                let found = memo.lookUp(url, now: now, store: store)
                if case .remembered(.ready(let renditions)) = found { store.markUsed(renditions) }
                return found
            }
        } catch {
            return .absent
        }
    }

    /// Writes `entry` on the blocking-I/O pool; a failure is logged (the next process fetches again).
    private func remember(_ entry: URLMemo.Entry, in memo: URLMemo) async {
        do {
            try await NIOThreadPool.singleton.runIfActive { try memo.write(entry) }
        } catch {
            logger.warning("cannot remember the outcome", metadata: ["digest.url": "\(entry.url)", "digest.error": "\(error)"])
        }
    }

    /// A hash of every setting an outcome depends on: the renditions' identities (their file names)
    /// and the limits that decide failures. An entry made under other settings is not used.
    static func memoSettings(_ configuration: Configuration) -> String {
        let downloader = configuration.downloader
        let maker = configuration.maker
        let text = [
            configuration.hero.identity, configuration.icon?.identity ?? "no icon",
            "bytes \(downloader.maxBytes)", "redirects \(downloader.maxRedirects)",
            "allow \(downloader.addressGuard.allowed.map(\.description).joined(separator: ","))",
            "pixels \(maker.maxPixels)", "decoder memory \(maker.maxDecoderMemory)", "scans \(maker.maxProgressiveScans)",
            "quality \(maker.minimumQuality) step \(maker.qualityStep)", "shrink \(maker.shrinkOnLoad)",
        ].joined(separator: "; ")
        return String(SHA256.hash(data: Array(text.utf8)).hexString.prefix(16))
    }
    /// The renditions of `source`: files already in the store, or newly made (on the render pool).
    private struct Produced: Sendable {
        var renditions: ImageRenditions
        /// The files were already in the store.
        var reused: Bool
    }

    /// Throws the `ImageError` of the source, or the pool's error when it no longer runs work.
    private func produce(_ source: [UInt8]) async throws -> Produced {
        let store = self.store
        let hero = configuration.hero
        let icon = configuration.icon
        let maker = RenditionMaker(configuration: configuration.maker)
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
                let renditions = ImageRenditions(hero: rendition, icon: nil)
                store.markUsed(renditions)
                return Produced(renditions: renditions, reused: true)
            }
            if kind != .gif, present.allSatisfy({ $0 != nil }) {
                let renditions = zip(specs, present).map { spec, file in
                    Rendition(
                        url: store.url(of: file!.name), mimeType: Self.mimeType(ofFile: file!.name), width: spec.width,
                        height: spec.height, byteCount: file!.bytes)
                }
                let reused = ImageRenditions(hero: renditions[0], icon: renditions.count > 1 ? renditions[1] : nil)
                store.markUsed(reused)
                return Produced(renditions: reused, reused: true)
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
    }

    static func mimeType(ofFile name: String) -> String {
        if name.hasSuffix(".png") { return "image/png" }
        if name.hasSuffix(".gif") { return "image/gif" }
        return "image/jpeg"
    }

}
