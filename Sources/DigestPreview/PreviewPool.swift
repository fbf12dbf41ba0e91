public import DigestCore
import Foundation
import Synchronization

/// A small fixed pool of threads, each with its own ``PreviewRenderer``: Pango keeps a font map per
/// thread and a renderer is not thread-safe, so previews render only on these threads and the
/// concurrency pool's few threads are never held by Pango work.
///
/// ```swift
/// let pool = PreviewPool(threads: 2, configuration: .init())
/// defer { pool.shutdown() }
/// let previews = try await pool.render(message, scale: 3)
/// ```
public final class PreviewPool: Sendable {
    private let workers: [RenderWorker]
    private let next = Atomic<Int>(0)
    public let configuration: PreviewRenderer.Configuration

    public init(threads: Int = 2, configuration: PreviewRenderer.Configuration = .init()) {
        self.configuration = configuration
        workers = (0..<max(1, threads)).map { RenderWorker(name: "digest-preview-\($0)", configuration: configuration) }
    }

    deinit { shutdown() }

    /// Runs `body` with one worker thread's renderer.
    public func withRenderer<T: Sendable>(
        _ body: @escaping @Sendable (PreviewRenderer) throws -> T
    ) async throws -> T {
        let index = next.wrappingAdd(1, ordering: .relaxed).oldValue % workers.count
        return try await workers[index].run(body)
    }

    /// Every state of every platform section of `message` (optionally only `platforms`).
    public func render(_ message: PreviewMessage, platforms: Set<Platform>? = nil, scale: Int = 3) async throws -> [RenderedPreview] {
        try await withRenderer { try $0.renderAll(message, platforms: platforms, scale: scale) }
    }

    /// One surface and state.
    public func render(_ content: NotificationContent, state: PreviewState, scale: Int = 3) async throws -> RenderedPreview {
        try await withRenderer { try $0.render(content, state: state, scale: scale) }
    }

    /// Lets the threads finish their queued work and exit.
    public func shutdown() {
        for worker in workers { worker.queue.close() }
    }
}

/// One thread and the renderer that lives on it.
private final class RenderWorker: Sendable {
    let queue = JobQueue<@Sendable (PreviewRenderer) -> Void>()

    init(name: String, configuration: PreviewRenderer.Configuration) {
        let queue = self.queue
        let thread = Thread {
            // Created on the thread that uses it, and never leaves it.
            let renderer = PreviewRenderer(configuration: configuration)
            while let job = queue.take() { job(renderer) }
        }
        thread.name = name
        thread.start()
    }

    func run<T: Sendable>(_ body: @escaping @Sendable (PreviewRenderer) throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            let accepted = queue.put { renderer in continuation.resume(with: Result { try body(renderer) }) }
            if !accepted { continuation.resume(throwing: PreviewError(.io, "the preview pool is shut down")) }
        }
    }
}

