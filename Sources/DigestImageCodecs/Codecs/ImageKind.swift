/// What a file is, told from its first bytes (WHATWG MIME sniffing), never from a Content-Type.
package enum ImageKind: String, Sendable, Hashable, CaseIterable {
    case jpeg, png, gif, webp, svg, html, empty, unknown

    /// Sniffs `bytes` (only the first few hundred are looked at).
    package init(sniffing bytes: some Collection<UInt8>) {
        let head = Array(bytes.prefix(512))
        if head.isEmpty {
            self = .empty
        } else if head.starts(with: [0xFF, 0xD8, 0xFF]) {
            self = .jpeg
        } else if head.starts(with: [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]) {
            self = .png
        } else if head.starts(with: Array("GIF87a".utf8)) || head.starts(with: Array("GIF89a".utf8)) {
            self = .gif
        } else if head.count >= 12, head.starts(with: Array("RIFF".utf8)), Array(head[8..<12]) == Array("WEBP".utf8) {
            self = .webp
        } else {
            self = Self.sniffMarkup(head)
        }
    }

    /// The MIME type a decodable kind is served as.
    package var mimeType: String? {
        switch self {
        case .jpeg: "image/jpeg"
        case .png: "image/png"
        case .gif: "image/gif"
        case .webp: "image/webp"
        case .svg: "image/svg+xml"
        case .html: "text/html"
        case .empty, .unknown: nil
        }
    }

    /// Markup after optional whitespace and a byte-order mark: SVG, or HTML (and XML that is neither).
    private static func sniffMarkup(_ head: [UInt8]) -> ImageKind {
        var start = 0
        if head.starts(with: [0xEF, 0xBB, 0xBF]) { start = 3 }
        while start < head.count, [0x20, 0x09, 0x0A, 0x0D, 0x0C].contains(head[start]) { start += 1 }
        guard start < head.count, head[start] == UInt8(ascii: "<") else { return .unknown }
        let text = String(decoding: head[start...], as: UTF8.self).lowercased()
        if text.contains("<svg") { return .svg }
        let htmlTags = ["<!doctype html", "<html", "<head", "<body", "<script", "<iframe", "<h1", "<div", "<table", "<a ", "<p", "<!--", "<title", "<br", "<style"]
        if htmlTags.contains(where: { text.hasPrefix($0) }) { return .html }
        return .unknown
    }
}

/// The file extension of an output MIME type.
public func fileExtension(forMIMEType mimeType: String) -> String {
    switch mimeType {
    case "image/jpeg": "jpg"
    case "image/png": "png"
    case "image/gif": "gif"
    default: "bin"
    }
}
