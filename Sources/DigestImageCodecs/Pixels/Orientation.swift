/// How stored pixels turn into what a viewer shows (EXIF orientation 1…8).
enum Orientation: Int, Sendable, CaseIterable {
    case up = 1, mirrored = 2, down = 3, downMirrored = 4, leftMirrored = 5, right = 6, rightMirrored = 7, left = 8

    /// Display width and height are stored height and width.
    var transposes: Bool { rawValue >= 5 }

    /// Display size of a stored `width`×`height` image.
    func displaySize(width: Int, height: Int) -> (width: Int, height: Int) {
        transposes ? (height, width) : (width, height)
    }

    /// The stored rectangle shown as display rectangle `rect` of an image stored `width`×`height`.
    func storedRect(_ rect: Rect, width: Double, height: Double) -> Rect {
        let (x, y, w, h) = (rect.x, rect.y, rect.width, rect.height)
        switch self {
        case .up: return rect
        case .mirrored: return Rect(x: width - x - w, y: y, width: w, height: h)
        case .down: return Rect(x: width - x - w, y: height - y - h, width: w, height: h)
        case .downMirrored: return Rect(x: x, y: height - y - h, width: w, height: h)
        case .leftMirrored: return Rect(x: y, y: x, width: h, height: w)
        case .right: return Rect(x: y, y: height - x - w, width: h, height: w)
        case .rightMirrored: return Rect(x: width - y - h, y: height - x - w, width: h, height: w)
        case .left: return Rect(x: width - y - h, y: x, width: h, height: w)
        }
    }

    /// The stored pixel shown at display pixel (`dx`, `dy`) of an image stored `width`×`height`.
    @inline(__always)
    func storedPixel(dx: Int, dy: Int, width: Int, height: Int) -> (x: Int, y: Int) {
        switch self {
        case .up: (dx, dy)
        case .mirrored: (width - 1 - dx, dy)
        case .down: (width - 1 - dx, height - 1 - dy)
        case .downMirrored: (dx, height - 1 - dy)
        case .leftMirrored: (dy, dx)
        case .right: (dy, height - 1 - dx)
        case .rightMirrored: (width - 1 - dy, height - 1 - dx)
        case .left: (width - 1 - dy, dx)
        }
    }
}

/// A rectangle in pixel coordinates (fractional: crops need not fall on pixel edges).
struct Rect: Sendable, Equatable {
    var x: Double
    var y: Double
    var width: Double
    var height: Double

    var maxX: Double { x + width }
    var maxY: Double { y + height }

    func union(_ other: Rect) -> Rect {
        let minX = Swift.min(x, other.x), minY = Swift.min(y, other.y)
        return Rect(x: minX, y: minY, width: Swift.max(maxX, other.maxX) - minX, height: Swift.max(maxY, other.maxY) - minY)
    }

    func scaled(by factor: Double) -> Rect {
        Rect(x: x * factor, y: y * factor, width: width * factor, height: height * factor)
    }
}
