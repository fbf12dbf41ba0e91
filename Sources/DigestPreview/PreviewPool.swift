package import DigestCore
import DigestThreads

/// A small fixed pool of threads, each with its own ``PreviewRenderer``: Pango keeps a font map per
/// thread and a renderer is not thread-safe, so previews render only on these threads and the
/// concurrency pool's few threads are never held by Pango work. A render borrows a free thread, or
/// waits its turn (a cancelled request leaves the line).
///
/// ```swift
/// let pool = PreviewPool(threads: 2, configuration: .init())
/// defer { pool.shutdown() }
/// let previews = try await pool.render(message, scale: 3)
/// ```
package final class PreviewPool: Sendable {
    /// Each thread's renderer is made on it and never leaves it.
    private let workers: ResourcePool<DedicatedThread<PreviewRenderer>>
    package let configuration: PreviewRenderer.Configuration

    /// Starts `threads` threads, each making its renderer (and, with `warmUp`, rendering every surface
    /// once at that scale, so fonts are loaded before the first request).
    package init(threads: Int = 2, configuration: PreviewRenderer.Configuration = .init(), warmUp scale: Int? = nil) {
        self.configuration = configuration
        workers = ResourcePool(
            (0..<max(1, threads)).map { index in
                DedicatedThread(name: "preview-\(index)") {
                    let renderer = PreviewRenderer(configuration: configuration)
                    if let scale { renderer.warmUp(scale: scale) }
                    return renderer
                }
            })
    }

    deinit { shutdown() }

    /// Runs `body` with one worker thread's renderer.
    package func withRenderer<T: Sendable>(
        _ body: @escaping @Sendable (PreviewRenderer) throws -> T
    ) async throws -> T {
        do {
            return try await workers.withResource { try await $0.run(body) }
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
        for worker in workers.resources { worker.close() }
    }
}
