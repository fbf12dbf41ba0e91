package import DigestCore
import CPangoCairo
import Foundation

/// Renders what a device shows for a notification as a PNG: Android's shade, the iOS lock screen
/// and Chrome's notification, collapsed and expanded, with real text layout (Pango: shaping, line
/// breaking per script, right-to-left, colour emoji, ellipsis at each surface's line limit).
///
/// A renderer owns a Pango font map and context, which are not thread-safe: use one renderer on one
/// thread (``PreviewPool`` keeps one per worker thread).
///
/// ```swift
/// let renderer = PreviewRenderer()
/// let message = try PreviewMessage(json: bytes)
/// let png = try renderer.render(message.contents[0], state: .collapsed, scale: 3).png
/// ```
package final class PreviewRenderer {
    /// What the renderer draws besides the message itself.
    package struct Configuration: Sendable, Hashable {
        /// Where pictures are read from.
        package var images = PreviewImages()
        /// The app name on Android and iOS.
        package var appName = "Digest"
        /// The site Chrome names on a web notification.
        package var origin = "digest.example"
        /// The iOS categories the app registers, by `aps.category`: the buttons iOS lists under a
        /// long-pressed notification of that category (an APNs message carries only the id). The
        /// default is docs/014's registration of `digest`, in English.
        package var iosCategories: [String: [PreviewAction]] = PreviewRenderer.registeredCategories

        package init(images: PreviewImages = PreviewImages()) {
            self.images = images
        }
    }

    /// The category docs/014's app registers (`digest`, the default `--ios-category`): every button
    /// a run may choose, in that order, `off` destructive, with the English titles of
    /// `Templates/en/strings.json` (the app's bundle localizes them on the device).
    package static let registeredCategories: [String: [PreviewAction]] = [
        "digest": [
            PreviewAction(id: "open", title: "Read"), PreviewAction(id: "later", title: "Later"),
            PreviewAction(id: "fewer", title: "Fewer like this"), PreviewAction(id: "pause", title: "Pause for 4 weeks"),
            PreviewAction(id: "off", title: "Stop the weekly digest", destructive: true),
        ]
    ]

    /// The families the surfaces use; missing ones draw as fallbacks or boxes, so they are checked.
    package static let requiredFonts = ["Roboto", "Inter", "Noto Sans CJK SC", "Noto Color Emoji"]

    /// Families of `requiredFonts` fontconfig cannot find.
    package static func missingFonts() -> [String] {
        requiredFonts.filter { cpc_font_family_available($0) == 0 }
    }

    package let configuration: Configuration
    /// Fonts found missing when the renderer started; every preview notes them.
    package let missingFonts: [String]
    let fontMap: UnsafeMutablePointer<PangoFontMap>
    let context: OpaquePointer
    private var bitmaps: [String: (bitmap: Bitmap?, problem: String?, modified: Date?)] = [:]

    package init(configuration: Configuration = Configuration()) {
        self.configuration = configuration
        missingFonts = Self.missingFonts()
        fontMap = pango_cairo_font_map_new()!
        context = pango_font_map_create_context(fontMap)
        // Fixed font options and unrounded glyph positions: the same layout at every scale and run.
        let options = cairo_font_options_create()
        cairo_font_options_set_antialias(options, CAIRO_ANTIALIAS_GRAY)
        cairo_font_options_set_hint_style(options, CAIRO_HINT_STYLE_NONE)
        cairo_font_options_set_hint_metrics(options, CAIRO_HINT_METRICS_OFF)
        pango_cairo_context_set_font_options(context, options)
        cairo_font_options_destroy(options)
        pango_context_set_round_glyph_positions(context, 0)
        pango_context_set_language(context, pango_language_from_string("en"))
        pango_cairo_context_set_resolution(context, 96)
    }

    /// Renders every surface once with text in each script the templates write (Latin with Polish
    /// letters, Cyrillic, Han, emoji), so the faces are found and their files opened when the thread
    /// starts, not while an editor waits for a page.
    package func warmUp(scale: Int = 3) {
        let text = "Zażółć gęślą jaźń — Съешь же ещё 你好世界 📚"
        for platform in Platform.allCases {
            for state in PreviewState.allCases {
                let content = NotificationContent(platform: platform, title: text, body: text, style: .bigText, actions: [text])
                _ = try? render(content, state: state, scale: scale)
            }
        }
    }

    deinit {
        cpc_object_unref(UnsafeMutableRawPointer(context))
        cpc_object_unref(UnsafeMutableRawPointer(fontMap))
    }

    /// Renders one platform's content in one state at `scale` (1, 2 or 3 pixels per dp/pt/px).
    package func render(
        _ content: NotificationContent, state: PreviewState, scale: Int = 3
    ) throws(PreviewError) -> RenderedPreview {
        let scale = min(3, max(1, scale))
        let limits = LineLimits.limits(platform: content.platform, style: content.style, state: state)
        var notes = content.notes
        notes.append(contentsOf: missingFonts.map { "font \($0) missing: text may draw in a fallback face" })
        var scene: Scene
        switch content.platform {
        case .android: scene = androidScene(content, state: state, limits: limits)
        case .ios: scene = iosScene(content, state: state, limits: limits)
        case .web: scene = webScene(content, state: state, limits: limits)
        }
        notes.append(contentsOf: scene.notes)
        let noteBlocks = notes.map {
            TextBlock(context: context, text: "⚠ " + $0, style: Self.noteStyle, width: scene.width - 32, maxLines: 3, role: "note")
        }
        let notesHeight = noteBlocks.reduce(0) { $0 + $1.height + 12 + 4 }
        let canvas = try Canvas(width: scene.width, height: scene.height + notesHeight + (noteBlocks.isEmpty ? 0 : 4), scale: scale)
        canvas.fill(scene.background)
        scene.draw(canvas)
        var y = scene.height
        for block in noteBlocks {
            let rect = Rect(x: 8, y: y, width: scene.width - 16, height: block.height + 12)
            canvas.fill(rect, radius: 6, color: Color(hex: 0xFFF4CE))
            canvas.fill(Rect(x: 8, y: y, width: 4, height: rect.height), radius: 2, color: Color(hex: 0xD93025))
            block.draw(on: canvas, x: 20, y: y + 6)
            y += rect.height + 4
        }
        return RenderedPreview(
            platform: content.platform, state: state, style: content.style, scale: scale,
            pixelWidth: canvas.pixelWidth, pixelHeight: canvas.pixelHeight, png: try canvas.png(),
            texts: scene.texts, notes: notes, limits: limits)
    }

    /// Every state of every platform section in `message`, message-level notes on each.
    package func renderAll(
        _ message: PreviewMessage, platforms: Set<Platform>? = nil, scale: Int = 3
    ) throws(PreviewError) -> [RenderedPreview] {
        var previews: [RenderedPreview] = []
        for var content in message.contents where platforms?.contains(content.platform) ?? true {
            content.notes.insert(contentsOf: message.notes, at: 0)
            for state in PreviewState.allCases {
                previews.append(try render(content, state: state, scale: scale))
            }
        }
        return previews
    }

    // MARK: - Shared pieces

    static let noteStyle = TextStyle(
        families: "Roboto, Noto Sans, Noto Naskh Arabic, Noto Sans Hebrew, Noto Sans CJK SC", size: 12, lineHeight: 16,
        color: Color(hex: 0x7A2E0E))

    func block(_ text: String, _ style: TextStyle, width: Double, lines: Int, role: String) -> TextBlock {
        TextBlock(context: context, text: text, style: style, width: max(8, width), maxLines: lines, role: role)
    }

    /// The picture at `url`, decoded once per file version; `nil` with the reason when it cannot be read.
    func bitmap(for url: String) -> (Bitmap?, String?) {
        switch configuration.images.localPath(for: url) {
        case .failure(let problem):
            return (nil, problem.reason)
        case .success(let path):
            let modified = (try? FileManager.default.attributesOfItem(atPath: path))?[.modificationDate] as? Date
            if let cached = bitmaps[path], cached.modified == modified { return (cached.bitmap, cached.problem) }
            if bitmaps.count >= 64 { bitmaps.removeAll() }
            switch Bitmap.load(path: path) {
            case .success(let bitmap):
                bitmaps[path] = (bitmap, nil, modified)
                return (bitmap, nil)
            case .failure(let problem):
                bitmaps[path] = (nil, problem.reason, modified)
                return (nil, problem.reason)
            }
        }
    }

    /// Draws `url`'s picture into `rect`, or a hatched placeholder saying it could not be read (the
    /// reason goes to `notes`).
    func drawPicture(
        _ url: String, _ bitmap: Bitmap?, problem: String?, on canvas: Canvas, in rect: Rect, radius: Double,
        cover: Bool
    ) {
        if let bitmap {
            canvas.draw(bitmap, in: rect, radius: radius, cover: cover)
            return
        }
        canvas.fill(rect, radius: radius, color: Color(hex: 0xE8EAED))
        cairo_save(canvas.cr)
        canvas.roundedRect(rect, radius: radius)
        cairo_clip(canvas.cr)
        var x = rect.x - rect.height
        while x < rect.maxX {
            cairo_move_to(canvas.cr, x, rect.maxY)
            cairo_line_to(canvas.cr, x + rect.height, rect.y)
            x += 10
        }
        cairo_set_source_rgba(canvas.cr, 0.8, 0.3, 0.3, 0.25)
        cairo_set_line_width(canvas.cr, 1)
        cairo_stroke(canvas.cr)
        cairo_restore(canvas.cr)
        canvas.stroke(rect, radius: radius, color: Color(hex: 0xD93025), lineWidth: 1.5)
        guard rect.width >= 60 else { return }
        let label = block(
            "image not readable", TextStyle(families: "Roboto, Noto Sans", weight: .bold, size: 12, lineHeight: 16, color: Color(hex: 0xB3261E), alignment: PANGO_ALIGN_CENTER),
            width: rect.width - 8, lines: 1, role: "placeholder")
        label.draw(on: canvas, x: rect.x + 4, y: rect.y + rect.height / 2 - 8)
    }

    static func imageNote(_ url: String, _ problem: String) -> String {
        let shown = url.count > 60 ? String(url.prefix(57)) + "…" : url
        return "image not readable: \(problem) (\(shown))"
    }

    /// Android cuts notification text at 1024 UTF-16 units; Chrome at 180/600 characters.
    static func platformCut(_ text: String, utf16: Int?, characters: Int?, what: String, notes: inout [String]) -> String {
        var text = text
        if let utf16, text.utf16.count > utf16 {
            var cut = ""
            var units = 0
            for character in text {
                let size = character.utf16.count
                if units + size > utf16 { break }
                cut.append(character)
                units += size
            }
            text = cut
            notes.append("\(what) over \(utf16) UTF-16 units: the device cuts it there")
        }
        if let characters, text.count > characters {
            text = String(text.prefix(characters))
            notes.append("\(what) over \(characters) characters: Chrome cuts it there")
        }
        return text
    }
}

/// A button of a registered iOS category: its identifier, title, and whether iOS draws it in red
/// (`UNNotificationActionOptions.destructive`).
package struct PreviewAction: Sendable, Hashable {
    package var id: String
    package var title: String
    package var destructive: Bool

    package init(id: String, title: String, destructive: Bool = false) {
        self.id = id
        self.title = title
        self.destructive = destructive
    }
}

/// What a surface lays out before anything is drawn: its size, its texts' lines, and how to draw it.
struct Scene {
    var width: Double
    var height: Double
    var background: Color
    var texts: [TextLines]
    var notes: [String]
    var draw: (Canvas) -> Void
}

/// One rendered surface and state.
package struct RenderedPreview: Sendable {
    package var platform: Platform
    package var state: PreviewState
    package var style: AndroidStyle
    package var scale: Int
    package var pixelWidth: Int
    package var pixelHeight: Int
    package var png: [UInt8]
    /// The texts as laid out: visible lines per role.
    package var texts: [TextLines]
    /// Problems drawn on the preview.
    package var notes: [String]
    /// The limits this surface applied.
    package var limits: TextLimits

    /// `android-collapsed.png`, `ios-expanded.png`, …
    package var fileName: String { "\(platform.rawValue)-\(state.rawValue).png" }

    /// The lines of one role (`title`, `body`, …), if it was drawn.
    package func text(_ role: String) -> TextLines? { texts.first { $0.role == role } }

    /// A human name: "Android BigText, collapsed".
    package var surfaceName: String {
        switch platform {
        case .android: "Android \(style == .bigPicture ? "BigPicture" : style.rawValue), \(state.rawValue)"
        case .ios: "iOS lock screen, \(state.rawValue)"
        case .web: "Chrome, \(state.rawValue)"
        }
    }
}
