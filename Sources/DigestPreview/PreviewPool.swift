package import DigestCore
import DigestThreads
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
package final class PreviewPool: Sendable {
    /// Each thread's renderer is made on it and never leaves it.
    private let workers: [DedicatedThread<PreviewRenderer>]
    private let next = Atomic<Int>(0)
    package let configuration: PreviewRenderer.Configuration

    package init(threads: Int = 2, configuration: PreviewRenderer.Configuration = .init()) {
        self.configuration = configuration
        workers = (0..<max(1, threads)).map { index in
            DedicatedThread(name: "digest-preview-\(index)") { PreviewRenderer(configuration: configuration) }
        }
    }

    deinit { shutdown() }

    /// Runs `body` with one worker thread's renderer.
    package func withRenderer<T: Sendable>(
        _ body: @escaping @Sendable (PreviewRenderer) throws -> T
    ) async throws -> T {
        let index = next.wrappingAdd(1, ordering: .relaxed).oldValue % workers.count
        do {
            return try await workers[index].run(body)
        } catch let error as DedicatedThreadError {
            throw PreviewError(.io, "the preview pool is shut down (\(error))")
        }
    }

    /// Every state of every platform section of `message` (optionally only `platforms`).
    package func render(_ message: PreviewMessage, platforms: Set<Platform>? = nil, scale: Int = 3) async throws -> [RenderedPreview] {
        try await withRenderer { try $0.renderAll(message, platforms: platforms, scale: scale) }
    }

    /// One surface and state.
    package func render(_ content: NotificationContent, state: PreviewState, scale: Int = 3) async throws -> RenderedPreview {
        try await withRenderer { try $0.render(content, state: state, scale: scale) }
    }

    /// Lets the threads finish their queued work and exit.
    package func shutdown() {
        for worker in workers { worker.close() }
    }
}
