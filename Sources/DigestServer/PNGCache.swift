import Crypto
import Synchronization

/// Rendered PNGs and their surface descriptions, keyed by the hash of the message they show: the same
/// message is rendered once, an edited template makes a new message and so a new key. Oldest entries
/// go first when the cache is full.
final class PNGCache: Sendable {
    /// Bumped when the renderer's drawing changes, so no stale picture is served.
    static let rendererVersion = "preview-1"

    private struct State {
        var pngs: [String: [UInt8]] = [:]
        var surfaces: [String: [PreviewPage.Surface]] = [:]
        var order: [String] = []
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

    func surfaces(_ hash: String) -> [PreviewPage.Surface]? {
        state.withLock { state in
            guard let surfaces = state.surfaces[hash], surfaces.allSatisfy({ state.pngs[Self.name(of: $0)] != nil }) else {
                return nil
            }
            return surfaces
        }
    }

    func store(png: [UInt8], name: String) {
        state.withLock { state in
            if state.pngs.updateValue(png, forKey: name) == nil { state.order.append(name) }
            while state.order.count > limit {
                let oldest = state.order.removeFirst()
                state.pngs[oldest] = nil
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
