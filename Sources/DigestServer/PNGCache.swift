import Crypto
import Synchronization

/// Rendered PNGs and their surface descriptions, keyed by the hash of the message they show: the same
/// message is rendered once, an edited template makes a new message and so a new key. Oldest entries
/// go first when the cache is full. Each PNG knows the readers it was drawn for, so that a reader the
/// store no longer holds (`digest readers forget`) has theirs dropped (``drop(reader:)``).
final class PNGCache: Sendable {
    /// Bumped when the renderer's drawing changes, so no stale picture is served.
    static let rendererVersion = "preview-1"

    private struct State {
        var pngs: [String: [UInt8]] = [:]
        var surfaces: [String: [PreviewPage.Surface]] = [:]
        var order: [String] = []
        /// The readers each PNG was drawn for (the same message bytes may be two readers').
        var readers: [String: Set<String>] = [:]
    }

    private let state = Mutex(State())
    let limit: Int

    init(limit: Int) {
        self.limit = max(8, limit)
    }

    /// Hex SHA-256 of the message bytes, the scale and the renderer version.
    static func key(message: [UInt8], scale: Int) -> String {
        var hasher = SHA256()
        hasher.update(data: Array("\(rendererVersion)|\(scale)|".utf8))
        hasher.update(data: message)
        return hasher.finalize().map { byte in
            let hex = String(byte, radix: 16)
            return byte < 16 ? "0" + hex : hex
        }.joined()
    }

    func png(_ name: String) -> [UInt8]? { state.withLock { $0.pngs[name] } }

    /// The readers the PNG `name` was drawn for.
    func readers(of name: String) -> Set<String> { state.withLock { $0.readers[name] ?? [] } }

    /// Adds `reader` to those the cached PNG `name` was drawn for (the same message drawn for another).
    func store(reader: String, name: String) {
        state.withLock { state in
            if state.pngs[name] != nil { state.readers[name, default: []].insert(reader) }
        }
    }

    /// Drops every PNG drawn for `reader` (and the surfaces that show one).
    func drop(reader: String) {
        state.withLock { state in
            let names = state.readers.compactMap { $0.value.contains(reader) ? $0.key : nil }
            guard !names.isEmpty else { return }
            for name in names {
                state.pngs[name] = nil
                state.readers[name] = nil
            }
            let dropped = Set(names)
            state.order.removeAll { dropped.contains($0) }
            state.surfaces = state.surfaces.filter { _, surfaces in !surfaces.contains { dropped.contains(Self.name(of: $0)) } }
        }
    }

    func surfaces(_ hash: String) -> [PreviewPage.Surface]? {
        state.withLock { state in
            guard let surfaces = state.surfaces[hash], surfaces.allSatisfy({ state.pngs[Self.name(of: $0)] != nil }) else {
                return nil
            }
            return surfaces
        }
    }

    func store(png: [UInt8], name: String, reader: String) {
        state.withLock { state in
            if state.pngs.updateValue(png, forKey: name) == nil { state.order.append(name) }
            state.readers[name, default: []].insert(reader)
            while state.order.count > limit {
                let oldest = state.order.removeFirst()
                state.pngs[oldest] = nil
                state.readers[oldest] = nil
            }
        }
    }

    func store(surfaces: [PreviewPage.Surface], hash: String) {
        state.withLock { state in
            state.surfaces[hash] = surfaces
            if state.surfaces.count > limit { state.surfaces = state.surfaces.filter { _, value in
                value.allSatisfy { state.pngs[Self.name(of: $0)] != nil }
            } }
        }
    }

    /// `<hash>-<platform>-<state>` from a surface's image URL `png/<name>.png`.
    static func name(of surface: PreviewPage.Surface) -> String {
        String(surface.image.dropFirst(4).dropLast(4))
    }
}
