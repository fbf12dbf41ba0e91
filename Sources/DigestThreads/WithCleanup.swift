/// Runs `body`, then `cleanup` whether `body` returned or threw — an async `defer`, which Swift does not
/// have. `cleanup` runs in a task of its own, so it completes even when the calling task was cancelled
/// (a resource's per-scope state must be dropped either way).
package func withCleanup<T>(
    _ body: () async throws -> T, cleanup: @escaping @Sendable () async -> Void
) async throws -> T {
    let value: T
    do {
        value = try await body()
    } catch {
        await Task { await cleanup() }.value
        throw error
    }
    await Task { await cleanup() }.value
    return value
}
